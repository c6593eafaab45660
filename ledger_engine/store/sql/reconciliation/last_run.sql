-- Where the source's last run stopped considering: its last batch and last statement file.
SELECT through_batch, through_file
FROM ledger_recon_runs
WHERE source = %s
ORDER BY run_id DESC
LIMIT 1;
