-- Statement entries that reconciliation considered and that are not settled exactly once,
-- and entries that a match or a break holds though no run considered them. A run of a
-- source considers the entries of the source's files up to its `through_file` (and those of
-- its open breaks, which an earlier run considered), and every entry it considered stays
-- settled, by its own source: in exactly one match (ledger_recon_matched_entries) or one open
-- break, or else in none because its break was written off with nothing to adjust (a
-- duplicate, or an entry of amount 0: the write-off resolves the break at once, a step of the
-- break's history, and no match holds it). So each entry of a file up to the source's latest
-- run is settled so, and no other entry is held at all. A finding names the entry (source,
-- file, position), what holds it and what is wrong. Reads the reconciliation tables and the
-- statement entries only (written apart from ledger_engine/store, which it checks).
WITH latest AS (
    SELECT r.source, MAX(r.through_file) AS through_file
    FROM ledger_recon_runs AS r
    GROUP BY r.source
),
considered AS (
    SELECT e.file_id, e.position
    FROM ledger_statement_entries AS e
    JOIN latest AS l ON l.source = e.source AND e.file_id <= l.through_file
),
holders (file_id, position, holder, holder_id, source) AS (
    SELECT me.file_id, me.position, 'match', me.match_id, m.source
    FROM ledger_recon_matched_entries AS me
    LEFT JOIN ledger_recon_matches AS m ON m.match_id = me.match_id
    UNION ALL
    SELECT b.file_id, b.position, 'open break', b.break_id, b.source
    FROM ledger_recon_breaks AS b
    WHERE b.status = 'open' AND b.file_id IS NOT NULL
    UNION ALL
    -- Written off with nothing to adjust: resolved by a history step of no match.
    SELECT b.file_id, b.position, 'break written off', b.break_id, b.source
    FROM ledger_recon_breaks AS b
    JOIN ledger_statement_entries AS e ON e.file_id = b.file_id AND e.position = b.position
    WHERE b.status = 'resolved' AND b.resolution = 'written_off' AND b.batch_id IS NULL
      AND (b.reason = 'duplicate' OR e.amount = 0)
      AND EXISTS (SELECT FROM ledger_recon_break_history AS s
                  WHERE s.break_id = b.break_id AND s.action = 'written_off'
                    AND s.match_id IS NULL)
),
held AS (
    SELECT h.file_id, h.position,
           COUNT(*) FILTER (WHERE h.holder <> 'break written off') AS settled_by,
           COUNT(*) FILTER (WHERE h.holder = 'break written off') AS written_off,
           string_agg(h.holder || ' ' || h.holder_id, ', ' ORDER BY h.holder, h.holder_id)
               AS held_by,
           bool_or(h.source IS DISTINCT FROM e.source) AS by_another_source
    FROM holders AS h
    LEFT JOIN ledger_statement_entries AS e ON e.file_id = h.file_id AND e.position = h.position
    GROUP BY h.file_id, h.position
)
SELECT e.source, file_id, position, COALESCE(h.held_by, 'nothing') AS held_by,
       CASE WHEN c.file_id IS NULL THEN 'held, though no run of its source considered it'
            WHEN h.file_id IS NULL THEN 'considered, and neither matched nor in an open break'
            WHEN h.settled_by > 1 THEN 'in more than one match or open break'
            ELSE 'held by a match or break of another source'
       END AS problem
FROM considered AS c
FULL JOIN held AS h USING (file_id, position)
LEFT JOIN ledger_statement_entries AS e USING (file_id, position)
WHERE c.file_id IS NULL
   OR h.file_id IS NULL
   OR h.settled_by > 1
   OR h.by_another_source
ORDER BY e.source, file_id, position
