-- Rows (rule, finding) of the declared `conserved` and `balanced` invariants over the batch
-- suite's scope, for the rules that share this query (a finding is a JSON object whose fields
-- are what the rule's finding names, in that order):
--   'conserved <invariant>': batches in scope whose net change of the invariant's table in
--     the change log (after minus before, a missing row counting as 0) differs from the sum
--     of its source fields over the applied events of its source streams: money is conserved
--     batch by batch, so the table's total follows its sources;
--   'balanced <invariant>': applied events of the invariant's streams in scope whose
--     change-log entries in its table do not sum to zero.
-- The scope's change-log entries are read once (along the primary key by batch alone, as
-- written_keys.sql explains) and summed per event and table in one pass; a batch's sums
-- follow from its events'. Only the events whose entries do not net to zero (deposits,
-- mostly) are then looked up, one primary-key probe each, for their stream and outcome; the
-- sources are summed per batch, for every invariant at once, in one read of the scope's
-- events. The invariants' tables, streams and fields are read from ledger_declared_invariants,
-- their tables' units from ledger_declared_tables: a finding's amounts read as a person reads
-- them in the table's declared unit (ledger_money_text; thousands separators where it has none).
-- {scope}: scope_batches.sql.
{scope},
sources AS MATERIALIZED (
    SELECT r.sql_name AS invariant, r.kind, r.table_name, source.stream, source.field,
           t.unit_code, t.unit_precision
    FROM ledger_declared_invariants AS r
    JOIN ledger_declared_tables AS t ON t.ledger = r.ledger AND t.table_name = r.table_name
    CROSS JOIN LATERAL jsonb_to_recordset(r.sources) AS source (stream text, field text)
    WHERE r.kind IN ('conserved', 'balanced')
),
nets AS MATERIALIZED (
    SELECT c.batch_id, c.position, c.table_name,
           COUNT(*) AS changes,
           SUM(COALESCE(CAST(c.after AS numeric), 0) - COALESCE(CAST(c.before AS numeric), 0))
               AS net
    FROM (
        SELECT s.table_name, s.batch_id, s.position, s.before, s.after
        FROM ledger_change_log AS s
        WHERE s.batch_id BETWEEN (SELECT scope.first_batch FROM scope)
                             AND (SELECT scope.last_batch FROM scope)
        OFFSET 0
    ) AS c
    WHERE c.table_name IN (SELECT s.table_name FROM sources AS s)
    GROUP BY c.batch_id, c.position, c.table_name
),
moved AS MATERIALIZED (
    SELECT n.batch_id, n.position, e.request_id, e.stream
    FROM (SELECT DISTINCT n.batch_id, n.position FROM nets AS n WHERE n.net <> 0) AS n
    JOIN LATERAL (
        SELECT x.request_id, x.stream
        FROM ledger_events AS x
        WHERE x.batch_id = n.batch_id AND x.position = n.position
          AND x.outcome = 'applied'
          AND x.stream IN (SELECT s.stream FROM sources AS s WHERE s.kind = 'balanced')
        LIMIT 1
    ) AS e ON true
),
deposits AS MATERIALIZED (
    SELECT e.batch_id, s.invariant, SUM(CAST(e.payload ->> s.field AS numeric)) AS total
    FROM ledger_events AS e
    JOIN sources AS s ON s.stream = e.stream AND s.kind = 'conserved'
    WHERE e.batch_id BETWEEN (SELECT scope.first_batch FROM scope)
                         AND (SELECT scope.last_batch FROM scope)
      AND e.outcome = 'applied'
    GROUP BY e.batch_id, s.invariant
),
conserved AS (
    SELECT DISTINCT s.invariant, s.table_name, s.unit_code, s.unit_precision
    FROM sources AS s
    WHERE s.kind = 'conserved'
),
findings (rule, batch_id, position, finding) AS (
    SELECT 'conserved ' || b.invariant, b.batch_id, 0,
           json_build_object(
               'batch_id', b.batch_id,
               'net_change', ledger_money_text(b.net_change, u.unit_code, u.unit_precision),
               'sources', ledger_money_text(b.deposits, u.unit_code, u.unit_precision),
               'difference',
               ledger_money_text(b.net_change - b.deposits, u.unit_code, u.unit_precision))
    FROM (
        SELECT COALESCE(c.invariant, d.invariant) AS invariant,
               COALESCE(c.batch_id, d.batch_id) AS batch_id,
               COALESCE(c.net_change, 0) AS net_change,
               COALESCE(d.total, 0) AS deposits
        FROM (
            SELECT i.invariant, n.batch_id, SUM(n.net) AS net_change
            FROM conserved AS i
            JOIN nets AS n ON n.table_name = i.table_name
            GROUP BY i.invariant, n.batch_id
        ) AS c
        FULL OUTER JOIN deposits AS d ON d.invariant = c.invariant AND d.batch_id = c.batch_id
    ) AS b
    JOIN conserved AS u ON u.invariant = b.invariant
    WHERE b.net_change <> b.deposits
    UNION ALL
    SELECT 'balanced ' || s.invariant, m.batch_id, m.position,
           json_build_object(
               'request_id', m.request_id,
               'batch_id', m.batch_id,
               'position', m.position,
               'stream', m.stream,
               'changes', n.changes,
               'net_change', ledger_money_text(n.net, s.unit_code, s.unit_precision))
    FROM moved AS m
    JOIN nets AS n ON n.batch_id = m.batch_id AND n.position = m.position AND n.net <> 0
    JOIN sources AS s
      ON s.kind = 'balanced' AND s.table_name = n.table_name AND s.stream = m.stream
)
SELECT f.rule, f.finding
FROM findings AS f
ORDER BY f.rule, f.batch_id, f.position
