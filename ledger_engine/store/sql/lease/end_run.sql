-- The run's end and its outcome (finished or failed).
UPDATE ledger_runs SET ended_at = clock_timestamp(), outcome = %s
WHERE epoch = %s AND ended_at IS NULL;
