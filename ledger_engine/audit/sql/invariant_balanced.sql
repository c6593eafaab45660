-- Applied events of a declared `balanced` invariant's streams whose change-log entries in its
-- table do not sum to zero (after minus before, a missing row counting as 0). An event that
-- changed nothing there has no entries and no finding; entries removed behind its back are
-- caught by the chain, the fold and the batch counts. The net change reads as a person reads
-- it in the table's declared unit (ledger_money_text, sql/0021_declared_units.sql; thousands
-- separators where it has none). Reads the logs only: no {{batch}}.
-- {invariant}: the invariant's sql_name.
WITH rule AS (
    SELECT r.table_name, source.stream, t.unit_code, t.unit_precision
    FROM ledger_declared_invariants AS r
    JOIN ledger_declared_tables AS t ON t.ledger = r.ledger AND t.table_name = r.table_name
    CROSS JOIN LATERAL jsonb_to_recordset(r.sources) AS source (stream text, field text)
    WHERE r.sql_name = '{invariant}'
)
SELECT e.request_id, e.batch_id, e.position, e.stream,
       COUNT(*) AS changes,
       ledger_money_text(
           SUM(COALESCE(CAST(c.after AS numeric), 0) - COALESCE(CAST(c.before AS numeric), 0)),
           rule.unit_code, rule.unit_precision) AS net_change
FROM rule
JOIN ledger_events AS e ON e.stream = rule.stream AND e.outcome = 'applied'
JOIN ledger_change_log AS c
  ON c.batch_id = e.batch_id AND c.position = e.position AND c.table_name = rule.table_name
GROUP BY e.batch_id, e.position, e.request_id, e.stream, rule.unit_code, rule.unit_precision
HAVING SUM(COALESCE(CAST(c.after AS numeric), 0) - COALESCE(CAST(c.before AS numeric), 0)) <> 0
ORDER BY e.batch_id, e.position
