-- A batch already committed under this id: its input, and what its commit reported.
SELECT input_fingerprint, batch_hash, merkle_roots FROM ledger_batches
WHERE batch_id = %(id)s;
