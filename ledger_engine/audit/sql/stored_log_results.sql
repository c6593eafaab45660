-- Every stored result, in (batch, position, seq) order.
SELECT batch_id, position, seq, stream, request_id, payload
FROM ledger_results
ORDER BY batch_id, position, seq
