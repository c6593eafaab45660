-- The last committed batch, which the next one must follow and chain to.
SELECT batch_id, batch_hash FROM ledger_batches ORDER BY batch_id DESC LIMIT 1;
