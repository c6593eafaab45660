-- Rows of a declared table that differ from the fold of its change log, either way round.
-- {table}: the table's sql_name; {batch}: the state rows (table_name, key, value jsonb).
WITH declared AS (
    SELECT d.table_name FROM ledger_declared_tables AS d WHERE d.sql_name = '{table}'
),
last_change AS (
    SELECT DISTINCT ON (c.key) c.key, c.after, c.batch_id, c.position
    FROM ledger_change_log AS c
    JOIN declared ON declared.table_name = c.table_name
    ORDER BY c.key, c.batch_id DESC, c.position DESC, c.seq DESC
),
state AS (
    SELECT s.key, s.value
    FROM {batch} AS s
    JOIN declared ON declared.table_name = s.table_name
)
SELECT COALESCE(state.key, last_change.key) AS key,
       state.value AS state_value,
       last_change.after AS change_log_value,
       last_change.batch_id AS last_change_batch,
       last_change.position AS last_change_position,
       CASE
           WHEN last_change.key IS NULL THEN 'row without change-log entries'
           WHEN state.key IS NULL THEN 'row missing'
           WHEN last_change.after IS NULL THEN 'row deleted by the change log still exists'
           ELSE 'value differs from the change log'
       END AS problem
FROM state
FULL OUTER JOIN last_change ON last_change.key = state.key
WHERE last_change.key IS NULL
   OR (state.key IS NULL AND last_change.after IS NOT NULL)
   OR (state.key IS NOT NULL AND state.value IS DISTINCT FROM last_change.after)
ORDER BY 1
