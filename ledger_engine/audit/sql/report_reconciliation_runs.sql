-- The audit report's reconciliation page: the runs of one reconciliation (`:run_ids`), one row
-- per run and source, with what each considered (the batches and statement files after its
-- source's previous run, through its own), how many items of each side its matches took, and
-- how many of the breaks it closed were write-offs it settled (a step `written_off` of the run).
-- Reads the reconciliation's tables only; written apart from the store's SQL.
WITH chosen AS (
    SELECT r.*
    FROM ledger_recon_runs AS r
    WHERE r.run_id = ANY(:run_ids)
),
matched_entries AS (
    SELECT m.run_id, count(*) AS items
    FROM ledger_recon_matches AS m
    JOIN ledger_recon_matched_entries AS e ON e.match_id = m.match_id
    WHERE m.run_id = ANY(:run_ids)
    GROUP BY m.run_id
),
matched_changes AS (
    SELECT m.run_id, count(*) AS items
    FROM ledger_recon_matches AS m
    JOIN ledger_recon_matched_changes AS c ON c.match_id = m.match_id
    WHERE m.run_id = ANY(:run_ids)
    GROUP BY m.run_id
),
written_off AS (
    SELECT h.run_id, count(*) AS breaks
    FROM ledger_recon_break_history AS h
    WHERE h.run_id = ANY(:run_ids) AND h.action = 'written_off'
    GROUP BY h.run_id
)
SELECT r.run_id, r.source, r.who, r.started_at, r.finished_at,
       coalesce(previous.through_batch, -1) AS after_batch, r.through_batch,
       coalesce(previous.through_file, 0) AS after_file, r.through_file,
       r.statement_items, r.ledger_items, r.matches, r.breaks_opened, r.breaks_closed,
       coalesce(e.items, 0) AS statement_matched,
       coalesce(c.items, 0) AS ledger_matched,
       coalesce(w.breaks, 0) AS written_off
FROM chosen AS r
LEFT JOIN LATERAL (
    SELECT p.through_batch, p.through_file
    FROM ledger_recon_runs AS p
    WHERE p.source = r.source AND p.run_id < r.run_id
    ORDER BY p.run_id DESC
    LIMIT 1
) AS previous ON true
LEFT JOIN matched_entries AS e ON e.run_id = r.run_id
LEFT JOIN matched_changes AS c ON c.run_id = r.run_id
LEFT JOIN written_off AS w ON w.run_id = r.run_id
ORDER BY r.source, r.run_id
