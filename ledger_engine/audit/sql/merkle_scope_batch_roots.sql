-- The Merkle roots (table name -> root) recorded in the batch row `:batch_id`; no row if there
-- is none.
SELECT merkle_roots FROM ledger_batches WHERE batch_id = :batch_id
