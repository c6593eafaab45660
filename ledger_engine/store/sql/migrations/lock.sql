-- The schema migrations' advisory lock, held to the end of the transaction: the core
-- migrations and a ledger's generated ones (`ledger_engine.store.schema`) take it alike.
SELECT pg_advisory_xact_lock(%(lock)s);
