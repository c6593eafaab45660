-- What a client needs to know of each request id it sent: `request_outcomes` gains, per event
-- carrying a request id, when its batch committed, the rejection's detail, the result events of
-- an applied event, and for a duplicate the batch and position of the executed event it
-- repeats. The first seven columns stay as 0003 made them (CREATE OR REPLACE may only append),
-- so readers of the old view keep working.
--
-- A lookup by request id starts from the index on ledger_events.request_id and reaches every
-- other table through its primary key (batch_id, position[, seq] or request_id), so it reads a
-- handful of index pages however long the ledger grows.

CREATE OR REPLACE VIEW request_outcomes AS
SELECT e.request_id,
       e.stream,
       e.outcome,
       e.batch_id,
       e.position,
       r.reason AS rejection_reason,
       d.kind AS duplicate_kind,
       b.committed_at,
       r.detail AS rejection_detail,
       first_event.batch_id AS duplicate_of_batch_id,
       first_event.position AS duplicate_of_position,
       -- An applied event's result payloads in emission order ([] when it emitted none);
       -- NULL for an event that did not run.
       CASE WHEN e.outcome = 'applied' THEN
           COALESCE(
               (SELECT jsonb_agg(res.payload ORDER BY res.seq)
                FROM ledger_results AS res
                WHERE res.batch_id = e.batch_id AND res.position = e.position),
               '[]'::jsonb)
       END AS results
FROM ledger_events AS e
LEFT JOIN ledger_batches AS b ON b.batch_id = e.batch_id
LEFT JOIN ledger_rejections AS r ON r.batch_id = e.batch_id AND r.position = e.position
LEFT JOIN ledger_duplicates AS d ON d.batch_id = e.batch_id AND d.position = e.position
-- ledger_requests holds the first, executed event of every id; a duplicate points to it.
LEFT JOIN ledger_requests AS first_event
    ON e.outcome = 'duplicate' AND first_event.request_id = e.request_id
WHERE e.request_id IS NOT NULL;
