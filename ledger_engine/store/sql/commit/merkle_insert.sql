-- The new digests of the buckets the batch touched (the rows bound by psycopg2's
-- execute_values, in place of the VALUES placeholder).
INSERT INTO ledger_merkle_buckets (table_name, bucket, digest) VALUES %s;
