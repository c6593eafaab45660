-- The bucket digests (bucket, digest as hex) the engine recorded for the table named `:name`
-- in ledger_merkle_buckets.
SELECT bucket, digest FROM ledger_merkle_buckets WHERE table_name = :name
