-- Matches that break the rule they were made by. A rule's match (kind 'rule') must be
-- made by a rule its run recorded (ledger_recon_run_rules: the rules as declared then), and
--   - its sides fit the rule's strategy: one_to_one one statement entry and one ledger
--     change; one_to_many one entry and a group of two or more changes; many_to_one a group
--     of two or more entries and one change;
--   - its amount_difference is its items' statement total minus their ledger total, and at
--     most max(amount_tolerance, floor(amount_relative x |statement total|)) either way;
--   - its date_difference_days is the days between the sides' dates (a side's date is its
--     latest item's), and at most the rule's window_days where the rule has a window.
-- An item's date is its value date, else its booking date (an entry) or the day its batch
-- committed, in UTC (a change); a change's value date is its event's `value_date` where that
-- is a well-formed date (YYYY-MM-DD), and a change's amount is `after` minus `before` (a
-- missing value counts as 0). A write-off's match (kind 'write_off': the break's items and the
-- adjusting event's change) records an amount_difference of 0 and its items net to 0. A
-- match made by hand (kind 'manual') is bound by no rule, but records its items' amount
-- difference as a rule's match does. One finding per match and problem:
-- the match, its source, kind and rule, and what is wrong. Reads the matches, their items,
-- the statement entries, the change log, events and batches (written apart from
-- ledger_engine/store, which it checks; no function of the store's schema is called).
WITH matches AS (
    SELECT m.match_id, m.source, m.kind, m.rule, m.run_id, m.amount_difference,
           m.date_difference_days
    FROM ledger_recon_matches AS m
),
statement_side AS (
    SELECT me.match_id, COUNT(*) AS items, SUM(e.amount) AS total,
           MAX(COALESCE(e.value_date, e.booking_date)) AS day
    FROM matches AS b
    JOIN ledger_recon_matched_entries AS me ON me.match_id = b.match_id
    JOIN ledger_statement_entries AS e ON e.file_id = me.file_id AND e.position = me.position
    GROUP BY me.match_id
),
changes AS (
    SELECT mc.match_id,
           CASE WHEN jsonb_typeof(c.after) = 'number' THEN CAST(c.after AS numeric) ELSE 0 END
         - CASE WHEN jsonb_typeof(c.before) = 'number' THEN CAST(c.before AS numeric) ELSE 0 END
               AS amount,
           ev.payload ->> 'value_date' AS value_date,
           CAST(bt.committed_at AT TIME ZONE 'UTC' AS date) AS committed_day
    FROM matches AS b
    JOIN ledger_recon_matched_changes AS mc ON mc.match_id = b.match_id
    JOIN ledger_change_log AS c
      ON c.batch_id = mc.batch_id AND c.position = mc.position AND c.seq = mc.seq
    LEFT JOIN ledger_events AS ev ON ev.batch_id = c.batch_id AND ev.position = c.position
    LEFT JOIN ledger_batches AS bt ON bt.batch_id = c.batch_id
),
dated AS (
    -- A value date is a date only if well-formed: the outer CASE admits the text's shape,
    -- year and month, the inner one the day within that month, so no cast can fail.
    SELECT x.match_id, x.amount,
           COALESCE(
               CASE WHEN x.value_date ~ '^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]$'
                         AND left(x.value_date, 4) <> '0000'
                         AND substr(x.value_date, 6, 2) BETWEEN '01' AND '12'
                    THEN CASE WHEN substr(x.value_date, 9, 2) BETWEEN '01' AND to_char(
                                       make_date(CAST(left(x.value_date, 4) AS integer),
                                                 CAST(substr(x.value_date, 6, 2) AS integer), 1)
                                       + INTERVAL '1 month' - INTERVAL '1 day', 'DD')
                              THEN CAST(x.value_date AS date)
                         END
               END,
               x.committed_day) AS day
    FROM changes AS x
),
ledger_side AS (
    SELECT d.match_id, COUNT(*) AS items, SUM(d.amount) AS total, MAX(d.day) AS day
    FROM dated AS d
    GROUP BY d.match_id
),
sides AS (
    SELECT b.*, r.rule AS recorded_rule, r.strategy, r.amount_tolerance, r.amount_relative,
           r.window_days,
           COALESCE(s.items, 0) AS entries, COALESCE(l.items, 0) AS changes,
           COALESCE(s.total, 0) AS statement_total, COALESCE(l.total, 0) AS ledger_total,
           COALESCE(s.total, 0) - COALESCE(l.total, 0) AS found_difference,
           abs(s.day - l.day) AS found_days,
           CASE WHEN r.rule IS NOT NULL THEN
               GREATEST(CAST(r.amount_tolerance AS double precision),
                        floor(r.amount_relative
                              * CAST(abs(COALESCE(s.total, 0)) AS double precision)))
           END AS allowed
    FROM matches AS b
    LEFT JOIN statement_side AS s ON s.match_id = b.match_id
    LEFT JOIN ledger_side AS l ON l.match_id = b.match_id
    LEFT JOIN ledger_recon_run_rules AS r ON r.run_id = b.run_id AND r.rule = b.rule
)
SELECT x.match_id, x.source, x.kind, x.rule, p.problem
FROM sides AS x
CROSS JOIN LATERAL (
    VALUES
        (x.kind = 'rule' AND x.recorded_rule IS NULL,
         'its run (' || x.run_id || ') recorded no rule of that name'),
        (x.kind = 'rule' AND NOT (
             (x.strategy = 'one_to_one' AND x.entries = 1 AND x.changes = 1)
             OR (x.strategy = 'one_to_many' AND x.entries = 1 AND x.changes >= 2)
             OR (x.strategy = 'many_to_one' AND x.entries >= 2 AND x.changes = 1)),
         'its rule is ' || x.strategy || ', but it matches ' || x.entries
             || ' statement entries with ' || x.changes || ' ledger changes'),
        (x.kind <> 'write_off' AND x.amount_difference <> x.found_difference,
         'amount_difference ' || x.amount_difference || ' recorded, its items differ by '
             || x.found_difference || ' (statement ' || x.statement_total || ', ledger '
             || x.ledger_total || ')'),
        (x.kind = 'rule' AND abs(x.amount_difference) > x.allowed,
         'amount_difference ' || x.amount_difference || ' beyond the '
             || CAST(x.allowed AS numeric) || ' its rule allows against a statement total of '
             || x.statement_total),
        (x.kind = 'rule' AND x.date_difference_days <> x.found_days,
         'date_difference_days ' || x.date_difference_days || ' recorded, its items'' dates '
             || 'are ' || x.found_days || ' days apart'),
        (x.kind = 'rule' AND x.date_difference_days > x.window_days,
         'date_difference_days ' || x.date_difference_days || ' beyond its rule''s window of '
             || x.window_days || ' days'),
        (x.kind = 'write_off' AND x.amount_difference <> 0,
         'a write-off recording amount_difference ' || x.amount_difference || ', not 0'),
        (x.kind = 'write_off' AND x.found_difference <> 0,
         'a write-off whose items net to ' || x.found_difference || ' (statement '
             || x.statement_total || ', ledger ' || x.ledger_total || '), not 0')
) AS p (broken, problem)
WHERE p.broken
ORDER BY x.source, x.match_id, p.problem
