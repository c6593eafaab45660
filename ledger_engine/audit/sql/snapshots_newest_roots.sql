-- The newest batch row's id and the Merkle roots (table name -> root) it records; no row if no
-- batch was committed.
SELECT batch_id, merkle_roots FROM ledger_batches ORDER BY batch_id DESC LIMIT 1
