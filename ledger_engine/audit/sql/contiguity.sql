-- Batch ids missing from ledger_batches, from the batch before the scope to its last batch
-- (they run 0, 1, 2, ... without a gap), and batches from the scope's first on that log
-- tables hold rows of but that have no batch row. A gap is one finding naming its first id
-- (its range in words). Over the scope ({scope}: scope_*.sql; the batch before it was proven
-- earlier); reads the logs only.
-- A batch without a batch row is either in a gap found here, past the scope's last batch,
-- which is the newest (finding nothing unless rows were forged there), or below batch 0,
-- where no batch can be (looked at by a scope from batch 0 on). Each log table is read once,
-- by its primary key (which starts with batch_id), for the rows of those batch ids only: one
-- condition naming the missing ids as an array, the range past the last batch and the range
-- below 0, which PostgreSQL reads as one bitmap of the three. No join over the probes: under
-- the batch audit's settings (nested loops off, `ledger_engine.audit.session`) a join turned
-- into a sort of every log table's batch ids, a read of the whole history per audit. Every
-- range is closed (see scope_batches.sql); a NULL bound reads nothing.
{scope},
bounds AS MATERIALIZED (
    SELECT GREATEST(s.first_batch - 1, 0) AS low, s.first_batch, s.last_batch FROM scope AS s
),
gaps AS (
    SELECT ids.previous + 1 AS first_missing, ids.batch_id - 1 AS last_missing
    FROM (
        SELECT b.batch_id,
               COALESCE(lag(b.batch_id) OVER (ORDER BY b.batch_id),
                        (SELECT bounds.low FROM bounds) - 1) AS previous
        FROM ledger_batches AS b
        WHERE b.batch_id BETWEEN (SELECT bounds.low FROM bounds)
                             AND (SELECT bounds.last_batch FROM bounds)
        UNION ALL
        -- past the last row in range: the scope's last batch must be there too
        SELECT (SELECT bounds.last_batch FROM bounds) + 1,
               COALESCE(MAX(b.batch_id), (SELECT bounds.low FROM bounds) - 1)
        FROM ledger_batches AS b
        WHERE b.batch_id BETWEEN (SELECT bounds.low FROM bounds)
                             AND (SELECT bounds.last_batch FROM bounds)
    ) AS ids
    WHERE ids.batch_id <> ids.previous + 1
),
missing AS MATERIALIZED (
    SELECT ARRAY(
        SELECT m.batch_id
        FROM gaps AS g
        CROSS JOIN bounds
        CROSS JOIN LATERAL generate_series(GREATEST(g.first_missing, bounds.first_batch),
                                           LEAST(g.last_missing, bounds.last_batch))
            AS m (batch_id)
    ) AS ids,
    (SELECT bounds.last_batch FROM bounds) + 1 AS past_low,
    CAST(9223372036854775807 AS bigint) AS past_high,
    CAST('-9223372036854775808' AS bigint) AS below_low,
    CASE WHEN (SELECT bounds.first_batch FROM bounds) = 0 THEN CAST(-1 AS bigint) END AS below_high
),
log_batches (table_name, batch_id) AS (
    SELECT 'ledger_events', batch_id FROM ledger_events
    UNION ALL SELECT 'ledger_change_log', batch_id FROM ledger_change_log
    UNION ALL SELECT 'ledger_results', batch_id FROM ledger_results
    UNION ALL SELECT 'ledger_rejections', batch_id FROM ledger_rejections
    UNION ALL SELECT 'ledger_duplicates', batch_id FROM ledger_duplicates
),
orphans AS (
    SELECT DISTINCT l.table_name, l.batch_id
    FROM log_batches AS l
    WHERE l.batch_id = ANY (CAST((SELECT missing.ids FROM missing) AS bigint[]))
       OR l.batch_id BETWEEN (SELECT missing.past_low FROM missing)
                         AND (SELECT missing.past_high FROM missing)
       OR l.batch_id BETWEEN (SELECT missing.below_low FROM missing)
                         AND (SELECT missing.below_high FROM missing)
)
SELECT first_missing AS batch_id, 'ledger_batches' AS table_name,
       CASE WHEN first_missing = last_missing THEN 'no batch row for this batch id'
            ELSE 'no batch rows for batch ids ' || first_missing || ' to ' || last_missing
       END AS problem
FROM gaps
UNION ALL
SELECT orphans.batch_id, orphans.table_name, 'rows of a batch that has no batch row'
FROM orphans
LEFT JOIN LATERAL (
    SELECT b.batch_id FROM ledger_batches AS b WHERE b.batch_id = orphans.batch_id LIMIT 1
) AS b ON true
WHERE b.batch_id IS NULL
ORDER BY 1, 2
