-- Ledger changes that a source's reconciliation runs considered and that are not in exactly
-- one match or one open break of that source, and changes that a source's match or open
-- break holds beyond the last batch its runs reached. What a run considered is derived here
-- from the runs and the evidence, independently of the run's own reading:
--   - its batches: after the latest `through_batch` of the source's runs before it, up to its
--     own `through_batch` (so each batch falls to one run of each source);
--   - its rows: the rows of the declared table that the source's statement entries name, in
--     the files up to its `through_file` (a source that names its rows by the ledger's keys
--     reads exactly those; one that declares its rows may read more, which only makes this
--     check see less, never wrongly);
--   - a movement: a change whose `after` differs from its `before` as numbers (a missing value
--     counts as 0), as the run reads a table of integer amounts.
-- Once considered, a change stays matched in a match of the source or in one open break of
-- it. A change may be matched once per source, so what is counted is per source: the source a
-- match or break names. A finding names the source, the change (batch, position, seq), what
-- holds it and what is wrong. Reads the runs, matches, breaks, statement entries and change
-- log (written apart from ledger_engine/store, which it checks).
WITH runs AS (
    SELECT r.source, r.through_file, r.through_batch,
           COALESCE(MAX(r.through_batch) OVER (
               PARTITION BY r.source ORDER BY r.run_id
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), -1) AS after_batch
    FROM ledger_recon_runs AS r
),
spoken AS (
    SELECT e.source, e.table_name, e.account, MIN(e.file_id) AS first_file
    FROM ledger_statement_entries AS e
    GROUP BY e.source, e.table_name, e.account
),
considered AS (
    -- One range of the change log's primary key per run (LATERAL: PostgreSQL reads each run's
    -- batches by index instead of joining the whole log with every run).
    SELECT r.source, c.batch_id, c.position, c.seq
    FROM runs AS r
    CROSS JOIN LATERAL (
        SELECT l.batch_id, l.position, l.seq, l.table_name, l.key, l.before, l.after
        FROM ledger_change_log AS l
        WHERE l.batch_id > r.after_batch AND l.batch_id <= r.through_batch
    ) AS c
    JOIN spoken AS s
      ON s.source = r.source AND s.table_name = c.table_name AND s.account = c.key
     AND s.first_file <= r.through_file
    WHERE CASE WHEN jsonb_typeof(c.after) = 'number' THEN CAST(c.after AS numeric) ELSE 0 END
       <> CASE WHEN jsonb_typeof(c.before) = 'number' THEN CAST(c.before AS numeric) ELSE 0 END
),
holders AS (
    SELECT m.source, mc.batch_id, mc.position, mc.seq, 1 AS matched, mc.match_id AS holder_id
    FROM ledger_recon_matched_changes AS mc
    LEFT JOIN ledger_recon_matches AS m ON m.match_id = mc.match_id
    UNION ALL
    SELECT b.source, b.batch_id, b.change_position, b.change_seq, 0, b.break_id
    FROM ledger_recon_breaks AS b
    WHERE b.status = 'open' AND b.batch_id IS NOT NULL
),
held AS (
    SELECT h.source, h.batch_id, h.position, h.seq,
           SUM(h.matched) AS matches,
           SUM(1 - h.matched) AS open_breaks,
           string_agg(CASE WHEN h.matched = 1 THEN 'match ' ELSE 'open break ' END || h.holder_id,
                      ', ' ORDER BY h.matched DESC, h.holder_id) AS held_by
    FROM holders AS h
    GROUP BY h.source, h.batch_id, h.position, h.seq
),
reached AS (
    SELECT r.source, MAX(r.through_batch) AS through_batch
    FROM ledger_recon_runs AS r
    GROUP BY r.source
)
SELECT source, batch_id, position, seq, COALESCE(h.held_by, 'nothing') AS held_by,
       CASE WHEN h.batch_id IS NULL
                THEN 'considered, and neither matched nor in an open break of its source'
            WHEN h.matches + h.open_breaks > 1
                THEN 'in more than one match or open break of its source'
            ELSE 'held, though no run of its source reached its batch'
       END AS problem
FROM considered AS c
FULL JOIN held AS h USING (source, batch_id, position, seq)
LEFT JOIN reached AS r USING (source)
WHERE h.batch_id IS NULL
   OR h.matches + h.open_breaks > 1
   OR (c.batch_id IS NULL AND (r.through_batch IS NULL OR batch_id > r.through_batch))
ORDER BY source, batch_id, position, seq
