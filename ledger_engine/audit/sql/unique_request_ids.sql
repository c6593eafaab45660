-- Request ids held by more than one executed (applied or rejected) event. An event whose
-- request id is not a valid one is stored with a NULL id and takes none. Reads the event log.
WITH executed AS (
    SELECT e.request_id, e.batch_id, e.position, e.outcome
    FROM ledger_events AS e
    WHERE e.outcome IN ('applied', 'rejected') AND e.request_id IS NOT NULL
)
SELECT request_id,
       COUNT(*) AS executed_events,
       string_agg(outcome || ' in batch ' || batch_id || ' at position ' || position, '; '
                  ORDER BY batch_id, position) AS events
FROM executed
GROUP BY request_id
HAVING COUNT(*) > 1
ORDER BY request_id
