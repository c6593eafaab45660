-- Batch ids missing from ledger_batches, from the batch before the scope to its last batch
-- (they run 0, 1, 2, ... without a gap), and batches from the scope's first on that log
-- tables hold rows of but that have no batch row. A gap is one finding naming its first id
-- (its range in words). Over the scope ({scope}: scope_*.sql; the batch before it was proven
-- earlier); reads the logs only.
-- A batch without a batch row is either in a gap found here (one probe per log table and
-- missing id), past the scope's last batch, which is the newest (one probe per log table,
-- finding nothing unless rows were forged there), or below batch 0, where no batch can be
-- (looked at by a scope from batch 0 on, one probe per log table): none of this reads a log
-- table's batch ids one by one. Every range is closed (see scope_batches.sql), and rows are
-- read rather than the first looked for: for LIMIT 1 PostgreSQL reads a table from its start.
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
probes (low, high) AS (
    SELECT m.batch_id, m.batch_id
    FROM gaps AS g
    CROSS JOIN bounds
    CROSS JOIN LATERAL generate_series(GREATEST(g.first_missing, bounds.first_batch),
                                       LEAST(g.last_missing, bounds.last_batch)) AS m (batch_id)
    UNION ALL
    SELECT bounds.last_batch + 1, 9223372036854775807 FROM bounds
    UNION ALL
    SELECT CAST('-9223372036854775808' AS bigint), -1 FROM bounds WHERE bounds.first_batch = 0
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
    FROM probes AS p
    CROSS JOIN LATERAL (
        SELECT l.table_name, l.batch_id FROM log_batches AS l
        WHERE l.batch_id BETWEEN p.low AND p.high
    ) AS l
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
