-- The change-log entries of the batch `%(batch)s` (bound by psycopg2), in (position, seq)
-- order.
SELECT batch_id, position, seq, request_id, table_name, key, before, after
FROM ledger_change_log
WHERE batch_id = %(batch)s
ORDER BY batch_id, position, seq
