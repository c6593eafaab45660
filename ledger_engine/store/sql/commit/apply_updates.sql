-- The table's rows the batch changed, each only if it still holds what the batch read, each
-- then naming the batch's last change of it; and, for each, a link from the row's first change
-- in the batch to the change the row named until then (sql/0025_change_links.sql). The row is
-- read once by key (`o`, the row as it was) and updated through its place (ctid), so that one
-- probe serves both. Returns how many rows it updated. {table} is the declared table; {value},
-- {key} and {holds_before} are the fixed fragments of its value and key types
-- (`ledger_engine.store.commit`).
WITH moved AS (
    UPDATE {table} t SET value = {value}, last_change_batch = %(batch_id)s,
        last_change_position = n.last_position, last_change_seq = n.last_seq
    FROM ledger_net n JOIN {table} o ON o.key = {key}
    WHERE n.table_name = %(table_name)s AND n.before IS NOT NULL AND n.after IS NOT NULL
    AND t.ctid = o.ctid AND {holds_before}
    RETURNING n.first_position, n.first_seq, o.last_change_batch AS prev_batch,
        o.last_change_position AS prev_position, o.last_change_seq AS prev_seq
),
linked AS (
    INSERT INTO ledger_change_links (batch_id, position, seq, prev_batch, prev_position, prev_seq)
    SELECT %(batch_id)s, m.first_position, m.first_seq, m.prev_batch, m.prev_position, m.prev_seq
    FROM moved AS m WHERE m.prev_batch IS NOT NULL
)
SELECT count(*) FROM moved;
