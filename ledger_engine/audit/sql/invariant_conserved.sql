-- One row if the total of a declared `conserved` invariant's table differs from the sum of
-- its source streams' payload fields over their applied events.
-- {invariant}: the invariant's sql_name; {batch}: the state rows (table_name, key, value jsonb).
WITH rule AS (
    SELECT r.table_name, source.stream, source.field
    FROM ledger_declared_invariants AS r
    CROSS JOIN LATERAL jsonb_to_recordset(r.sources) AS source (stream text, field text)
    WHERE r.sql_name = '{invariant}'
),
state AS (
    SELECT COALESCE(SUM(CAST(CAST(s.value AS text) AS numeric)), 0) AS total
    FROM {batch} AS s
    JOIN (SELECT DISTINCT rule.table_name FROM rule) AS t ON t.table_name = s.table_name
),
sources AS (
    SELECT COALESCE(SUM(CAST(e.payload ->> rule.field AS numeric)), 0) AS total
    FROM rule
    JOIN ledger_events AS e ON e.stream = rule.stream AND e.outcome = 'applied'
)
SELECT state.total AS table_total,
       sources.total AS sources_total,
       state.total - sources.total AS difference
FROM state
CROSS JOIN sources
WHERE state.total <> sources.total
