-- How many breaks are open, per source and reason (the workbench's filter choices).
SELECT source, reason, count(*) AS open_breaks
FROM ledger_recon_breaks
WHERE status = 'open'
GROUP BY source, reason
ORDER BY source, reason;
