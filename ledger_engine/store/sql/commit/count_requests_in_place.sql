-- The batch's events of the outcomes given whose request row is theirs. Executed request ids
-- are keyed by id alone, so they are found from the batch's events, one probe each (a
-- lateral subquery with a limit is never turned into a join).
SELECT count(*) FROM ledger_events e CROSS JOIN LATERAL (
    SELECT 1 FROM ledger_requests r WHERE r.request_id = e.request_id
    AND r.batch_id = e.batch_id AND r.position = e.position LIMIT 1
) r
WHERE e.batch_id = %s AND e.outcome = ANY(%s);
