-- One row if the total of a declared `conserved` invariant's table differs from the sum of
-- its source streams' payload fields over their applied events: both totals and the
-- difference as a person reads them in the table's declared unit (ledger_money_text,
-- sql/0021_declared_units.sql; thousands separators where it has none).
-- {invariant}: the invariant's sql_name; {batch}: the state rows (table_name, key, value jsonb).
WITH rule AS (
    SELECT r.table_name, source.stream, source.field
    FROM ledger_declared_invariants AS r
    CROSS JOIN LATERAL jsonb_to_recordset(r.sources) AS source (stream text, field text)
    WHERE r.sql_name = '{invariant}'
),
unit AS (
    SELECT t.unit_code, t.unit_precision
    FROM ledger_declared_invariants AS r
    JOIN ledger_declared_tables AS t ON t.ledger = r.ledger AND t.table_name = r.table_name
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
SELECT ledger_money_text(state.total, unit.unit_code, unit.unit_precision) AS table_total,
       ledger_money_text(sources.total, unit.unit_code, unit.unit_precision) AS sources_total,
       ledger_money_text(state.total - sources.total, unit.unit_code, unit.unit_precision)
           AS difference
FROM state
CROSS JOIN sources
LEFT JOIN unit ON true
WHERE state.total <> sources.total
