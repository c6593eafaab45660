-- The input fingerprint of a committed batch (no row: the batch is not committed).
SELECT input_fingerprint FROM ledger_batches WHERE batch_id = %(id)s;
