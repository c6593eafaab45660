-- Every row of every declared table (ledger_rows), with the batch that last wrote it: {rows}
-- is the UNION ALL of rows_view_part.sql, one per declared table. Recorded as run in the
-- generated migration.
CREATE VIEW {view} AS
SELECT r.table_name, r.key, r.value, r.last_batch_id
FROM ({rows}) AS r;
