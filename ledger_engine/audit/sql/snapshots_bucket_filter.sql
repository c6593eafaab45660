-- Not a statement: the {where} of snapshots_bucket_sums.sql that keeps only the buckets of
-- the array `%s` (bound by psycopg2).
WHERE bucket = ANY(%s)
