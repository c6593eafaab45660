-- The audit report's reconciliation page: the statement files each run considered anew (its
-- source's files loaded after the source's previous run, through its own `through_file`).
SELECT r.run_id, f.file_id, f.file_name, f.statement_id, f.entries, f.rejected
FROM ledger_recon_runs AS r
JOIN ledger_statement_files AS f
    ON f.source = r.source
   AND f.file_id <= r.through_file
   AND f.file_id > coalesce((
        SELECT p.through_file
        FROM ledger_recon_runs AS p
        WHERE p.source = r.source AND p.run_id < r.run_id
        ORDER BY p.run_id DESC
        LIMIT 1
   ), 0)
WHERE r.run_id = ANY(:run_ids)
ORDER BY r.run_id, f.file_id
