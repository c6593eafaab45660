-- Batch rows of the scope whose prev_hash is not the batch_hash of the batch before (for the
-- first in scope: the batch before the scope; batch 0's: the genesis hash, 64 zeros), named
-- by batch; hashes shown by their first 16 hex digits. Only the links are checked here:
-- recomputing each row's hash from its fields is `ledger verify`'s work, in Python. Over the
-- scope's relations ({scope}: scope_*.sql); the batch before each is one primary-key probe.
{scope}
SELECT b.batch_id,
       left(b.prev_hash, 16) AS prev_hash,
       left(CASE WHEN b.batch_id = 0 THEN repeat('0', 64) ELSE earlier.batch_hash END, 16)
           AS hash_of_batch_before,
       CASE WHEN b.batch_id = 0 THEN 'the first batch does not start from the genesis hash'
            WHEN earlier.batch_id IS NULL THEN 'the batch before is missing'
            ELSE 'prev_hash is not the batch_hash of the batch before'
       END AS problem
FROM batches AS b
LEFT JOIN LATERAL (
    SELECT x.batch_id, x.batch_hash FROM ledger_batches AS x
    WHERE x.batch_id = b.batch_id - 1 LIMIT 1
) AS earlier ON true
WHERE b.prev_hash IS DISTINCT FROM
      CASE WHEN b.batch_id = 0 THEN repeat('0', 64) ELSE earlier.batch_hash END
ORDER BY b.batch_id
