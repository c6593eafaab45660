-- What a run may consider now: the last committed batch and the source's last loaded file.
SELECT coalesce((SELECT max(batch_id) FROM ledger_batches), -1),
       coalesce((SELECT max(file_id) FROM ledger_statement_files WHERE source = %s), 0);
