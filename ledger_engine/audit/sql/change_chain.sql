-- Change-log entries of a declared table whose `before` is not the `after` of the key's
-- entry before them (for a key's first entry: not NULL, as every row starts from nothing).
-- Reads the log only. {table}: the table's sql_name.
SELECT key, batch_id, position, seq,
       before, previous_after,
       CASE WHEN nth = 1 THEN 'first change does not start from nothing'
            ELSE 'before differs from the after of the change before' END AS problem
FROM (
    SELECT c.key, c.batch_id, c.position, c.seq, c.before,
           lag(c.after) OVER w AS previous_after,
           row_number() OVER w AS nth
    FROM ledger_change_log AS c
    WHERE c.table_name = (
        SELECT d.table_name FROM ledger_declared_tables AS d WHERE d.sql_name = '{table}'
    )
    WINDOW w AS (PARTITION BY c.key ORDER BY c.batch_id, c.position, c.seq)
) AS chain
WHERE before IS DISTINCT FROM previous_after
ORDER BY key, batch_id, position, seq
