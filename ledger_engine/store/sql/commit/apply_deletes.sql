-- The table's rows the batch deleted, each only if it still holds what the batch read; and, for
-- each, a link from the row's first change in the batch to the change the row named
-- (sql/0025_change_links.sql). Returns how many rows it deleted.
WITH gone AS (
    DELETE FROM {table} t USING ledger_net n WHERE n.table_name = %(table_name)s
    AND n.before IS NOT NULL AND n.after IS NULL AND t.key = {key} AND {holds_before}
    RETURNING n.first_position, n.first_seq, t.last_change_batch AS prev_batch,
        t.last_change_position AS prev_position, t.last_change_seq AS prev_seq
),
linked AS (
    INSERT INTO ledger_change_links (batch_id, position, seq, prev_batch, prev_position, prev_seq)
    SELECT %(batch_id)s, g.first_position, g.first_seq, g.prev_batch, g.prev_position, g.prev_seq
    FROM gone AS g WHERE g.prev_batch IS NOT NULL
)
SELECT count(*) FROM gone;
