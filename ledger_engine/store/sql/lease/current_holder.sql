-- The newest run that has not ended (it may have died without saying so).
SELECT epoch, holder, host, pid, started_at FROM ledger_runs
WHERE ended_at IS NULL ORDER BY epoch DESC LIMIT 1;
