-- The run lease given back (the same keys as try_lock.sql).
SELECT pg_advisory_unlock(%s, hashtext(current_schema()));
