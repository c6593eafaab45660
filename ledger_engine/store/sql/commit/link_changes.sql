-- Each of the table's rows the batch changes that exists: a link from the row's first change
-- in the batch to the change the row names as its last (sql/0025_change_links.sql). Run before
-- the net changes are applied, which name the batch's own changes instead. {table}, {key}: as
-- in apply_updates.sql.
INSERT INTO ledger_change_links (batch_id, position, seq, prev_batch, prev_position, prev_seq)
SELECT %(batch_id)s, n.first_position, n.first_seq,
    t.last_change_batch, t.last_change_position, t.last_change_seq
FROM ledger_net n JOIN {table} t ON t.key = {key}
WHERE n.table_name = %(table_name)s AND t.last_change_batch IS NOT NULL;
