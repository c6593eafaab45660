-- The rows of an integer-keyed ledger table among a batch's keys (one array value: see
-- store/batch_reads.py).
SELECT key, value FROM {table} WHERE key = ANY(%s::bigint[]);
