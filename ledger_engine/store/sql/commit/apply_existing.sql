-- The table's rows that existed before the batch and that it changed (`moved`) or deleted
-- (`gone`), each only if it still holds what the batch read; a changed row then names the
-- batch's last change of it. For each such row, a link from its first change in the batch to
-- the change the row named until then (sql/0025_change_links.sql). A changed row is read once
-- by key (`o`, the row as it was) and updated through its place (ctid), so that one probe
-- serves the update and its link. Returns how many rows it changed and how many it deleted.
-- {table} is the declared table; {value}, {key} and {holds_before} are the fixed fragments of
-- its value and key types (`ledger_engine.store.commit`).
WITH moved AS (
    UPDATE {table} t SET value = {value}, last_change_batch = %(batch_id)s,
        last_change_position = n.last_position, last_change_seq = n.last_seq
    FROM ledger_net n JOIN {table} o ON o.key = {key}
    WHERE n.table_name = %(table_name)s AND n.before IS NOT NULL AND n.after IS NOT NULL
    AND t.ctid = o.ctid AND {holds_before}
    RETURNING n.first_position, n.first_seq, o.last_change_batch AS prev_batch,
        o.last_change_position AS prev_position, o.last_change_seq AS prev_seq
),
gone AS (
    DELETE FROM {table} t USING ledger_net n WHERE n.table_name = %(table_name)s
    AND n.before IS NOT NULL AND n.after IS NULL AND t.key = {key} AND {holds_before}
    RETURNING n.first_position, n.first_seq, t.last_change_batch AS prev_batch,
        t.last_change_position AS prev_position, t.last_change_seq AS prev_seq
),
linked AS (
    INSERT INTO ledger_change_links (batch_id, position, seq, prev_batch, prev_position, prev_seq)
    SELECT %(batch_id)s, r.first_position, r.first_seq, r.prev_batch, r.prev_position, r.prev_seq
    FROM (SELECT * FROM moved UNION ALL SELECT * FROM gone) AS r
    WHERE r.prev_batch IS NOT NULL
)
SELECT (SELECT count(*) FROM moved), (SELECT count(*) FROM gone);
