-- Every row of every declared table (ledger_rows), with the batch that last wrote it: {rows}
-- is the UNION ALL of rows_view_part.sql, one per declared table. Recorded as run in the
-- generated migration.
CREATE VIEW {view} AS
SELECT r.table_name, r.key, r.value, last_change.batch_id AS last_batch_id
FROM ({rows}) AS r
LEFT JOIN LATERAL (
    SELECT c.batch_id FROM ledger_change_log AS c WHERE c.key = r.key AND c.table_name = r.table_name
    ORDER BY c.batch_id DESC, c.position DESC, c.seq DESC LIMIT 1
) AS last_change ON true;
