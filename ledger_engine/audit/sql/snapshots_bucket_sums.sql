-- Per bucket, the sums of the leaves' four 64-bit words of the (key_json, value_json) rows
-- that the query {rows} returns, each word as (sum, count of negative words), most significant
-- first (`snapshots.digest_of_word_sums` makes a digest of them). Composed by psycopg2
-- (`snapshots.composable`): {rows} is a composed query, {where} empty or
-- snapshots_bucket_filter.sql (its `%s` bound).
--
-- `OFFSET 0` keeps PostgreSQL from inlining the subqueries: inlined, it would compute each
-- row's leaf once per use (eight times), not once, and sort the rows by bucket instead of
-- hashing them into 4,096 groups (19.8 s instead of 5.3 s for 500,000 rows).
SELECT bucket,
       sum(w0), count(*) FILTER (WHERE w0 < 0),
       sum(w1), count(*) FILTER (WHERE w1 < 0),
       sum(w2), count(*) FILTER (WHERE w2 < 0),
       sum(w3), count(*) FILTER (WHERE w3 < 0)
FROM (
    SELECT bucket, ledger_merkle_word(leaf, 0) AS w0, ledger_merkle_word(leaf, 1) AS w1,
           ledger_merkle_word(leaf, 2) AS w2, ledger_merkle_word(leaf, 3) AS w3
    FROM (
        SELECT ledger_merkle_bucket(key_json) AS bucket,
               ledger_merkle_leaf(key_json, value_json) AS leaf
        FROM ({rows}) AS source (key_json, value_json)
        OFFSET 0
    ) AS leaves
    {where}
    OFFSET 0
) AS words
GROUP BY bucket
