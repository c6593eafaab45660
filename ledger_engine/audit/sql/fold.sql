-- Rows of a declared table that differ from the fold of its change log, either way round, or
-- that name another change than their key's last as their last (what the commit links the
-- key's next change to: sql/0025_change_links.sql).
-- {table}: the table's sql_name; {batch}: the state rows (state_rows.sql).
WITH declared AS (
    SELECT d.table_name FROM ledger_declared_tables AS d WHERE d.sql_name = '{table}'
),
last_change AS (
    SELECT DISTINCT ON (c.key) c.key, c.after, c.batch_id, c.position, c.seq
    FROM ledger_change_log AS c
    JOIN declared ON declared.table_name = c.table_name
    ORDER BY c.key, c.batch_id DESC, c.position DESC, c.seq DESC
),
state AS (
    SELECT s.key, s.value,
           s.last_change_batch, s.last_change_position, s.last_change_seq
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
           WHEN state.value IS DISTINCT FROM last_change.after
               THEN 'value differs from the change log'
           ELSE 'row names another change as its last'
       END AS problem
FROM state
FULL OUTER JOIN last_change ON last_change.key = state.key
WHERE last_change.key IS NULL
   OR (state.key IS NULL AND last_change.after IS NOT NULL)
   OR (state.key IS NOT NULL AND state.value IS DISTINCT FROM last_change.after)
   OR (state.key IS NOT NULL AND last_change.after IS NOT NULL
       AND (state.last_change_batch, state.last_change_position, state.last_change_seq)
           IS DISTINCT FROM (last_change.batch_id, last_change.position, last_change.seq))
ORDER BY 1
