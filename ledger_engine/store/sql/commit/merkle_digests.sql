-- The stored bucket digests of one table.
SELECT bucket, digest FROM ledger_merkle_buckets WHERE table_name = %s;
