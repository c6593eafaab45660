-- The rows the change log says the buckets of the array `%s` (bound by psycopg2) of one table
-- hold: per key whose last change left a row, its key, bucket, last `after` and that row's
-- Merkle leaf. Composed by psycopg2 (`snapshots.composable`): {last_changes} is
-- snapshots_last_changes.sql for the table.
SELECT key, bucket, after, ledger_merkle_leaf(key_json, ledger_canonical_json(after))
FROM (SELECT key, key_json, after, ledger_merkle_bucket(key_json) AS bucket
      FROM ({last_changes}) AS last_change OFFSET 0) AS folded
WHERE bucket = ANY(%s) AND after IS NOT NULL
