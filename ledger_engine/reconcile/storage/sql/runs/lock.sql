-- One reconciliation of a source at a time: a transaction advisory lock keyed by the ledger's
-- schema and the source (`ledger_engine.store.locks.RECONCILE_LOCK`).
SELECT pg_advisory_xact_lock(%s, hashtext(current_schema() || '/' || %s));
