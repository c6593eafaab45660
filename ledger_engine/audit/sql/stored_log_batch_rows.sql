-- Every batch row's counts, in batch order.
SELECT batch_id, events_ingested, applied, rejected, duplicates, changes, results
FROM ledger_batches
ORDER BY batch_id
