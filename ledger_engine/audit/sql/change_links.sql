-- Links of the change log (ledger_change_links, which the commits write and the batch audit's
-- chain rule follows: sql/0025_change_links.sql) other than the ones the log's own order of
-- each key's changes implies, either way round: a key's first change in a batch is linked to
-- the key's change before it exactly when that change left a row. Named by the linked change
-- (batch, position, seq), with its key where the change log has it. Reads the whole log: the
-- full audit's.
WITH implied AS (
    SELECT c.batch_id, c.position, c.seq, c.table_name, c.key,
           c.prev_batch, c.prev_position, c.prev_seq
    FROM (
        SELECT l.batch_id, l.position, l.seq, l.table_name, l.key,
               lag(l.batch_id) OVER w AS prev_batch, lag(l.position) OVER w AS prev_position,
               lag(l.seq) OVER w AS prev_seq, lag(l.after) OVER w AS prev_after
        FROM ledger_change_log AS l
        WINDOW w AS (PARTITION BY l.table_name, l.key ORDER BY l.batch_id, l.position, l.seq)
    ) AS c
    WHERE c.prev_batch < c.batch_id AND c.prev_after IS NOT NULL
)
SELECT COALESCE(i.batch_id, k.batch_id) AS batch_id,
       COALESCE(i.position, k.position) AS position,
       COALESCE(i.seq, k.seq) AS seq,
       COALESCE(i.table_name, x.table_name) AS table_name,
       COALESCE(i.key, x.key) AS key,
       k.prev_batch || '/' || k.prev_position || '/' || k.prev_seq AS linked_to,
       i.prev_batch || '/' || i.prev_position || '/' || i.prev_seq AS change_before,
       CASE WHEN k.batch_id IS NULL THEN 'link missing'
            WHEN i.batch_id IS NULL THEN 'link where none belongs'
            ELSE 'link names another change' END AS problem
FROM implied AS i
FULL OUTER JOIN ledger_change_links AS k
  ON k.batch_id = i.batch_id AND k.position = i.position AND k.seq = i.seq
LEFT JOIN ledger_change_log AS x
  ON i.batch_id IS NULL
 AND x.batch_id = k.batch_id AND x.position = k.position AND x.seq = k.seq
WHERE i.batch_id IS NULL OR k.batch_id IS NULL
   OR (k.prev_batch, k.prev_position, k.prev_seq)
      IS DISTINCT FROM (i.prev_batch, i.prev_position, i.prev_seq)
ORDER BY 1, 2, 3
