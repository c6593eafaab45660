-- Whoever held the lease before without ending its run was killed.
UPDATE ledger_runs SET ended_at = clock_timestamp(), outcome = 'abandoned'
WHERE ended_at IS NULL;
