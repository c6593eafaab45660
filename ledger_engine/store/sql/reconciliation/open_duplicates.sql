-- The statement entries of the source's open duplicate breaks.
SELECT file_id, position
FROM ledger_recon_breaks
WHERE source = %s AND status = 'open' AND reason = 'duplicate'
ORDER BY 1, 2;
