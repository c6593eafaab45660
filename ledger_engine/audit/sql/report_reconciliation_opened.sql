-- The audit report's reconciliation page: the breaks the runs `:run_ids` opened, by reason
-- (some of them may be resolved since).
SELECT b.reason, count(*) AS breaks
FROM ledger_recon_breaks AS b
WHERE b.opened_run_id = ANY(:run_ids)
GROUP BY b.reason
ORDER BY b.reason
