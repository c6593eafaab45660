-- The batch commit's advisory lock, held to the end of the transaction. Its second key is
-- the ledger's schema, hashed (`ledger_engine.store.lease.LEDGER_KEY`): one lock per ledger.
SELECT pg_advisory_xact_lock(%(lock)s, hashtext(current_schema()));
