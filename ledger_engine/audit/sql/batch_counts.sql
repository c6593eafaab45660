-- Batch rows of the scope whose recorded counts differ from the rows they describe: one
-- finding per batch and field, with the recorded and the found count. The events, and the
-- change log and results, are each counted in one pass grouped by batch. Over the scope's
-- relations ({scope}: scope_*.sql); reads the logs only.
{scope},
event_counts AS (
    SELECT e.batch_id,
           COUNT(*) AS events_ingested,
           COUNT(*) FILTER (WHERE e.outcome = 'applied') AS applied,
           COUNT(*) FILTER (WHERE e.outcome = 'rejected') AS rejected,
           COUNT(*) FILTER (WHERE e.outcome = 'duplicate') AS duplicates
    FROM events AS e
    GROUP BY e.batch_id
),
log_counts AS (
    SELECT l.batch_id,
           COUNT(*) FILTER (WHERE l.log = 'ledger_change_log') AS changes,
           COUNT(*) FILTER (WHERE l.log = 'ledger_results') AS results
    FROM logged AS l
    WHERE l.log IN ('ledger_change_log', 'ledger_results')
    GROUP BY l.batch_id
)
SELECT b.batch_id, counted.field, counted.recorded, counted.found
FROM batches AS b
LEFT JOIN event_counts AS e ON e.batch_id = b.batch_id
LEFT JOIN log_counts AS l ON l.batch_id = b.batch_id
CROSS JOIN LATERAL (
    VALUES ('events_ingested', b.events_ingested, COALESCE(e.events_ingested, 0)),
           ('applied', b.applied, COALESCE(e.applied, 0)),
           ('rejected', b.rejected, COALESCE(e.rejected, 0)),
           ('duplicates', b.duplicates, COALESCE(e.duplicates, 0)),
           ('changes', b.changes, COALESCE(l.changes, 0)),
           ('results', b.results, COALESCE(l.results, 0))
) AS counted (field, recorded, found)
WHERE counted.recorded <> counted.found
ORDER BY b.batch_id, counted.field
