-- The batch rows `:first` to `:last` (bound), with their hashed fields (chain.HASHED_FIELDS,
-- in that order) and recorded batch_hash, in batch id order: a slice of the chain, for
-- `chain.verify_chain_slice`.
SELECT batch_id, ledger, input_fingerprint, input_files, events_ingested, applied, rejected,
       duplicates, changes, results, merkle_roots, prev_hash, batch_hash
FROM ledger_batches
WHERE batch_id BETWEEN :first AND :last
ORDER BY batch_id
