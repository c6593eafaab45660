-- Every committed batch's id and the input files it took in, in batch order.
SELECT batch_id, input_files FROM ledger_batches ORDER BY 1
