-- One statement load at a time per ledger: a transaction advisory lock whose second key is
-- the ledger's schema, hashed (`ledger_engine.store.locks.STATEMENTS_LOCK`).
SELECT pg_advisory_xact_lock(%s, hashtext(current_schema()));
