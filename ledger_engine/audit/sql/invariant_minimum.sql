-- The rows of a declared `minimum` invariant's table that hold less than its minimum, the
-- value and the minimum as a person reads them in the table's declared unit ("-0.05 EUR":
-- ledger_money_text, sql/0021_declared_units.sql; thousands separators where it has none).
-- {invariant}: the invariant's sql_name; {batch}: the state rows (table_name, key, value jsonb).
SELECT s.key,
       ledger_money_text(CAST(CAST(s.value AS text) AS numeric), t.unit_code, t.unit_precision)
           AS value,
       ledger_money_text(r.minimum, t.unit_code, t.unit_precision) AS minimum
FROM {batch} AS s
JOIN ledger_declared_invariants AS r ON r.table_name = s.table_name
JOIN ledger_declared_tables AS t ON t.ledger = r.ledger AND t.table_name = r.table_name
WHERE r.sql_name = '{invariant}'
  AND CAST(CAST(s.value AS text) AS numeric) < r.minimum
ORDER BY s.key
