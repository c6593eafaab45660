-- The stored results of the batch `%(batch)s` (bound by psycopg2), in (position, seq) order.
SELECT batch_id, position, seq, stream, request_id, payload
FROM ledger_results
WHERE batch_id = %(batch)s
ORDER BY batch_id, position, seq
