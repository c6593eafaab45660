-- The source's last run: where it stopped considering (its last batch and last statement
-- file) and the start it read movements from (from_batch NULL: a run from before the start
-- was recorded, sql/0024).
SELECT run_id, through_batch, through_file, from_batch, from_date
FROM ledger_recon_runs
WHERE source = %s
ORDER BY run_id DESC
LIMIT 1;
