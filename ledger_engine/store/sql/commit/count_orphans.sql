-- Rows of the journal table {journal} whose event is missing from the batch or has none of
-- the outcomes given: counted set-based in place of foreign keys (see sql/0005).
SELECT count(*) FROM {journal} x WHERE x.batch_id = %s AND NOT EXISTS (
    SELECT 1 FROM ledger_events e WHERE e.batch_id = x.batch_id
    AND e.position = x.position AND e.outcome = ANY(%s)
);
