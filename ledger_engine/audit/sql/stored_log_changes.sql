-- Every change-log entry, in (batch, position, seq) order.
SELECT batch_id, position, seq, request_id, table_name, key, before, after
FROM ledger_change_log
ORDER BY batch_id, position, seq
