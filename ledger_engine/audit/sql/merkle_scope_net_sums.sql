-- Per bucket, the word sums of the leaves of each key of one table written in a scope of
-- batches: as its last `after` in the scope (the tree now: a0..a3) and as its first `before`
-- (the tree before the scope: b0..b3), each word as (sum, count of negative words), summed as
-- `snapshots.bucket_digests` sums them; a NULL side (no row) has no leaf. Run through psycopg2:
-- `%s` are the scope's first and last batch and the table's name (bound); {key_json}: the
-- change-log key's canonical JSON for the table's key type (`snapshots.log_key_json`).
--
-- The scope's entries of the table are read once, along the primary key by batch alone
-- (`OFFSET 0` keeps the table name out of that scan: see written_keys.sql), and
-- sorted once by key (bytewise: any order groups a key's changes, and it sorts faster than the
-- database's collation) and order for both the first `before` (DISTINCT ON) and the last
-- `after` (a window). A jsonb value's canonical JSON is what `ledger_canonical_json` gives:
-- for a scalar (a number, in the bank's tables) that is the value's text, which that PL/pgSQL
-- function returns too, so the function is called for objects and arrays only (a call per
-- value cost most of this check's time).
SELECT bucket,
       sum(a0), count(*) FILTER (WHERE a0 < 0), sum(a1), count(*) FILTER (WHERE a1 < 0),
       sum(a2), count(*) FILTER (WHERE a2 < 0), sum(a3), count(*) FILTER (WHERE a3 < 0),
       sum(b0), count(*) FILTER (WHERE b0 < 0), sum(b1), count(*) FILTER (WHERE b1 < 0),
       sum(b2), count(*) FILTER (WHERE b2 < 0), sum(b3), count(*) FILTER (WHERE b3 < 0)
FROM (
    SELECT ledger_merkle_bucket(key_json) AS bucket,
           ledger_merkle_word(after_leaf, 0) AS a0, ledger_merkle_word(after_leaf, 1) AS a1,
           ledger_merkle_word(after_leaf, 2) AS a2, ledger_merkle_word(after_leaf, 3) AS a3,
           ledger_merkle_word(before_leaf, 0) AS b0, ledger_merkle_word(before_leaf, 1) AS b1,
           ledger_merkle_word(before_leaf, 2) AS b2, ledger_merkle_word(before_leaf, 3) AS b3
    FROM (
        SELECT key_json,
               ledger_merkle_leaf(
                   key_json,
                   CASE WHEN jsonb_typeof(after) IN ('object', 'array')
                        THEN ledger_canonical_json(after) ELSE after::text END
               ) AS after_leaf,
               ledger_merkle_leaf(
                   key_json,
                   CASE WHEN jsonb_typeof(before) IN ('object', 'array')
                        THEN ledger_canonical_json(before) ELSE before::text END
               ) AS before_leaf
        FROM (
            SELECT DISTINCT ON (c.key COLLATE "C") {key_json} AS key_json, c.before,
                   last_value(c.after) OVER (
                       PARTITION BY c.key COLLATE "C" ORDER BY c.batch_id, c.position, c.seq
                       ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING
                   ) AS after
            FROM (
                SELECT s.table_name, s.key, s.batch_id, s.position, s.seq, s.before, s.after
                FROM ledger_change_log AS s
                WHERE s.batch_id BETWEEN %s AND %s
                OFFSET 0
            ) AS c
            WHERE c.table_name = %s
            ORDER BY c.key COLLATE "C", c.batch_id, c.position, c.seq
        ) AS net
        OFFSET 0
    ) AS leaves
    OFFSET 0
) AS words
GROUP BY bucket
