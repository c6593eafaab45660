-- The source's open breaks, with the items each is about.
SELECT break_id, reason, file_id, position, batch_id, change_position, change_seq
FROM ledger_recon_breaks
WHERE source = %s AND status = 'open'
ORDER BY break_id;
