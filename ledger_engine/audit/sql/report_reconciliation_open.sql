-- The audit report's reconciliation page: the open breaks of the sources `:sources`, counted
-- by reason and by age bucket. A break's age is the days since it opened, at the reading
-- transaction's start (`now()`); bucket k holds the ages in [edges[k], edges[k + 1]) (1-based
-- edges, `:edges` in days; bucket 0 is below the first edge), as width_bucket counts them.
SELECT b.reason,
       width_bucket(
           CAST(extract(epoch FROM now() - b.opened_at) / 86400 AS double precision),
           CAST(:edges AS double precision[])
       ) AS bucket,
       count(*) AS breaks
FROM ledger_recon_breaks AS b
WHERE b.status = 'open' AND b.source = ANY(:sources)
GROUP BY 1, 2
ORDER BY 1, 2
