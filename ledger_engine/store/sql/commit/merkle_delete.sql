-- The stored digests of the buckets the batch touched, replaced by merkle_insert.sql.
DELETE FROM ledger_merkle_buckets WHERE table_name = %s AND bucket = ANY(%s);
