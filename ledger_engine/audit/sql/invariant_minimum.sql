-- The rows of a declared `minimum` invariant's table that hold less than its minimum.
-- {invariant}: the invariant's sql_name; {batch}: the state rows (table_name, key, value jsonb).
SELECT s.key,
       CAST(CAST(s.value AS text) AS numeric) AS value,
       r.minimum
FROM {batch} AS s
JOIN ledger_declared_invariants AS r ON r.table_name = s.table_name
WHERE r.sql_name = '{invariant}'
  AND CAST(CAST(s.value AS text) AS numeric) < r.minimum
ORDER BY s.key
