-- The change log's row index was most of the cost of writing a batch's journal
-- (bench/studies/journal-writes.md): (table_name, key, batch_id, position) made every entry
-- wide, and the index outgrew the buffer cache. Finding one row's changes needs only its key
-- (the views then filter the table and sort that row's few entries). A hash index takes an
-- entry in one bucket page instead of a descent and comparisons: inserting a batch's 4x10^5
-- changes cost 0.5 s more than no index at all, against 1.7 s for a B-tree on
-- (table_name, key) and 2.7 s for the old one (same machine, same batch).
DROP INDEX ledger_change_log_row;
CREATE INDEX ledger_change_log_key ON ledger_change_log USING hash (key);
