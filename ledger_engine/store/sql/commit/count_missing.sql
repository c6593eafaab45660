-- Events of the batch with the outcome given that have no row in the journal table
-- {journal} (a rejected event without its rejection, a duplicate without its duplicate).
SELECT count(*) FROM ledger_events e WHERE e.batch_id = %s AND e.outcome = %s
AND NOT EXISTS (
    SELECT 1 FROM {journal} x WHERE x.batch_id = e.batch_id AND x.position = e.position
);
