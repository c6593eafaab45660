-- Every row of one declared table, as the state rows every rule reads: the table's name as
-- the application declared it, the key as text, the value as JSON (whatever its declared type),
-- and the change the row names as its last (sql/0025_change_links.sql).
-- {table}: the table's sql_name.
SELECT d.table_name, CAST(s.key AS text) AS key, to_jsonb(s.value) AS value,
       s.last_change_batch, s.last_change_position, s.last_change_seq
FROM "{table}" AS s
CROSS JOIN ledger_declared_tables AS d
WHERE d.sql_name = '{table}'
