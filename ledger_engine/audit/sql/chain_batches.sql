-- Every batch row's hashed fields (chain.HASHED_FIELDS, in that order) and its recorded
-- batch_hash, in batch id order: the whole chain, for `chain.verify_chain`.
SELECT batch_id, ledger, input_fingerprint, input_files, events_ingested, applied, rejected,
       duplicates, changes, results, merkle_roots, prev_hash, batch_hash
FROM ledger_batches
ORDER BY batch_id
