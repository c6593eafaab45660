-- Ledger changes that a source's reconciliation runs considered and that are not in exactly
-- one match or one open break of that source, and changes that a source's match or open
-- break holds beyond the last batch its runs reached. What the runs considered is derived here
-- from the runs, the accounts they recorded and the change log, independently of a run's own
-- reading (the scope in the specification of ledger_engine/reconcile/matching):
--   - every movement, up to the `through_batch` of the source's latest run, of each account
--     the source reconciles (`ledger_recon_accounts`, which its runs keep: every account its
--     statements named, or that it declares), from the start its latest run read from: the
--     batches from its `from_batch` on, dated on or after its `from_date` if it has one (a
--     movement's date is its event's `value_date`, else the day its batch committed, UTC);
--   - for a run recorded before runs recorded their start (sql/0024, `from_batch` NULL), the
--     movements it read then: in the batches after the latest `through_batch` of the source's
--     runs before it, up to its own, of the rows that the source's statement entries name in
--     the files up to its `through_file`;
--   - a movement: a change whose `after` differs from its `before` as numbers (a missing value
--     counts as 0), as the run reads a table of integer amounts.
-- Once considered, a change stays matched in a match of the source or in one open break of
-- it. A change may be matched once per source, so what is counted is per source: the source a
-- match or break names. A finding names the source, the change (batch, position, seq), what
-- holds it and what is wrong. Reads the runs, the reconciled accounts, matches, breaks,
-- statement entries, change log, events and batches (written apart from ledger_engine/store,
-- which it checks).
WITH runs AS (
    SELECT r.run_id, r.source, r.through_file, r.through_batch, r.from_batch, r.from_date,
           COALESCE(MAX(r.through_batch) OVER (
               PARTITION BY r.source ORDER BY r.run_id
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), -1) AS after_batch,
           r.run_id = MAX(r.run_id) OVER (PARTITION BY r.source) AS latest
    FROM ledger_recon_runs AS r
),
spoken AS (
    SELECT e.source, e.table_name, e.account, MIN(e.file_id) AS first_file
    FROM ledger_statement_entries AS e
    GROUP BY e.source, e.table_name, e.account
),
read_then AS (
    -- One range of the change log's primary key per run before sql/0024 (LATERAL: PostgreSQL
    -- reads each run's batches by index instead of joining the whole log with every run).
    SELECT r.source, c.batch_id, c.position, c.seq, c.before, c.after
    FROM runs AS r
    CROSS JOIN LATERAL (
        SELECT l.batch_id, l.position, l.seq, l.table_name, l.key, l.before, l.after
        FROM ledger_change_log AS l
        WHERE l.batch_id > r.after_batch AND l.batch_id <= r.through_batch
    ) AS c
    JOIN spoken AS s
      ON s.source = r.source AND s.table_name = c.table_name AND s.account = c.key
     AND s.first_file <= r.through_file
    WHERE r.from_batch IS NULL
),
since_start AS (
    -- Each reconciled account's changes read by its key, from the latest run's start.
    SELECT r.source, c.batch_id, c.position, c.seq, c.before, c.after
    FROM runs AS r
    JOIN ledger_recon_accounts AS a ON a.source = r.source
    CROSS JOIN LATERAL (
        SELECT l.batch_id, l.position, l.seq, l.before, l.after
        FROM ledger_change_log AS l
        WHERE l.table_name = a.table_name AND l.key = a.account
          AND l.batch_id >= r.from_batch AND l.batch_id <= r.through_batch
    ) AS c
    WHERE r.latest AND r.from_batch IS NOT NULL
      AND (r.from_date IS NULL OR r.from_date <= (
          SELECT COALESCE(ledger_date_or_null(e.payload ->> 'value_date'),
                          CAST(b.committed_at AT TIME ZONE 'UTC' AS date))
          FROM ledger_events AS e
          JOIN ledger_batches AS b ON b.batch_id = e.batch_id
          WHERE (e.batch_id, e.position) = (c.batch_id, c.position)))
),
considered AS (
    SELECT DISTINCT source, batch_id, position, seq
    FROM (SELECT * FROM read_then UNION ALL SELECT * FROM since_start) AS c
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
