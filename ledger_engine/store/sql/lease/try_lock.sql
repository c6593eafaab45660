-- The run lease, if no other session holds it: a session advisory lock whose second key is
-- the ledger's schema, hashed (`ledger_engine.store.lease.LEDGER_KEY`).
SELECT pg_try_advisory_lock(%s, hashtext(current_schema()));
