-- Rows (rule, finding) about the keys of one declared table written in the batch suite's
-- scope, for the rules that share this query (a finding is a JSON object whose fields are
-- what the rule's finding names, in that order):
--   'fold': keys whose row is not the `after` of their last change (the scope's last batch is
--     the newest in the snapshot the rule reads; change-log rows of a later batch would have
--     no batch row, the contiguity rule's finding), or does not name that change as its last
--     (what the commit links the key's next change to: sql/0025_change_links.sql);
--   'minimum <invariant>', for each declared `minimum` invariant of the table: keys whose
--     value is below its minimum, read from ledger_declared_invariants (the value and the
--     minimum as a person reads them in the table's declared unit: ledger_money_text);
--   'chain': changes whose `before` is not the `after` of the key's change before them. In
--     the scope, that is the change before in a window over the key's changes; for the key's
--     first change in the scope, the change its commit linked it to (ledger_change_links, the
--     scope's links read by their primary key's range), read by one probe of the change log's
--     primary key, which must be a change of the same key before it (else: missing); a first
--     change without a link is the key's first with a row: it must start from nothing.
-- One read of the changes, along the primary key by batch alone, the table name applied after
-- that scan (OFFSET 0 keeps PostgreSQL from moving it into the scan: given the table name it
-- may pick the index on table name and key, which means reading every entry of the table);
-- one sort by key (bytewise: any order groups a key's changes, and it sorts faster than the
-- database's collation); one probe of each key's row for both 'fold' and 'minimum'.
-- {scope}: scope_batches.sql; {table}: the table's sql_name; {key_type}: its key's SQL type
-- (the change log keeps keys as text). No label is written here: the table's name as
-- declared is read once, from ledger_declared_tables.
{scope},
declared AS MATERIALIZED (
    SELECT d.table_name, d.unit_code, d.unit_precision
    FROM ledger_declared_tables AS d
    WHERE d.sql_name = '{table}'
),
in_scope AS MATERIALIZED (
    SELECT c.key, c.batch_id, c.position, c.seq, c.before, c.after,
           lag(c.after) OVER w AS previous_after,
           row_number() OVER w AS nth,
           lead(c.batch_id) OVER w IS NULL AS last
    FROM (
        SELECT s.table_name, s.key, s.batch_id, s.position, s.seq, s.before, s.after
        FROM ledger_change_log AS s
        WHERE s.batch_id BETWEEN (SELECT scope.first_batch FROM scope)
                             AND (SELECT scope.last_batch FROM scope)
        OFFSET 0
    ) AS c
    WHERE c.table_name = (SELECT declared.table_name FROM declared)
    WINDOW w AS (PARTITION BY c.key COLLATE "C" ORDER BY c.batch_id, c.position, c.seq)
),
last_changes AS MATERIALIZED (
    SELECT i.key, i.after, i.batch_id, i.position, i.seq FROM in_scope AS i WHERE i.last
),
state_rows AS MATERIALIZED (
    SELECT CAST(t.key AS text) AS key, t.value,
           t.last_change_batch, t.last_change_position, t.last_change_seq
    FROM "{table}" AS t
    WHERE t.key = ANY (CAST(ARRAY(SELECT l.key FROM last_changes AS l) AS {key_type}[]))
),
written AS (
    SELECT l.key, l.after, l.batch_id, l.position, s.key AS state_key, s.value,
           (s.last_change_batch, s.last_change_position, s.last_change_seq)
               IS DISTINCT FROM (l.batch_id, l.position, l.seq) AS names_another
    FROM last_changes AS l
    LEFT JOIN state_rows AS s ON s.key = l.key
),
links AS MATERIALIZED (
    SELECT k.batch_id, k.position, k.seq, k.prev_batch, k.prev_position, k.prev_seq
    FROM ledger_change_links AS k
    WHERE k.batch_id BETWEEN (SELECT scope.first_batch FROM scope)
                         AND (SELECT scope.last_batch FROM scope)
),
firsts AS (
    -- Each key's first change in scope, its link, and the change the link names, found by
    -- the change log's primary key alone (the key compared after, not joined on: joined on,
    -- it lets PostgreSQL read all the key's entries through the index on keys instead).
    SELECT f.key, f.batch_id, f.position, f.seq, f.before,
           CASE WHEN x.found THEN x.after END AS previous_after,
           k.batch_id IS NULL AS first_ever,
           CASE WHEN k.batch_id IS NOT NULL AND NOT COALESCE(x.found, false)
                THEN 'its change before the scope (batch ' || k.prev_batch
                     || ', position ' || k.prev_position || ', seq ' || k.prev_seq
                     || ') is missing from the change log'
           END AS missing
    FROM in_scope AS f
    LEFT JOIN links AS k
      ON k.batch_id = f.batch_id AND k.position = f.position AND k.seq = f.seq
    LEFT JOIN LATERAL (
        SELECT x.after,
               x.table_name = (SELECT declared.table_name FROM declared) AND x.key = f.key
               AND (x.batch_id, x.position, x.seq) < (f.batch_id, f.position, f.seq) AS found
        FROM ledger_change_log AS x
        WHERE x.batch_id = k.prev_batch AND x.position = k.prev_position
          AND x.seq = k.prev_seq
        LIMIT 1
    ) AS x ON true
    WHERE f.nth = 1
),
chained AS (
    SELECT i.key, i.batch_id, i.position, i.seq, i.before, i.previous_after,
           false AS first_ever, NULL AS missing
    FROM in_scope AS i
    WHERE i.nth > 1
    UNION ALL
    SELECT * FROM firsts
),
findings (rule, key, batch_id, position, seq, finding) AS (
    SELECT 'fold', w.key, w.batch_id, w.position, 0,
           json_build_object(
               'key', w.key,
               'state_value', w.value,
               'change_log_value', w.after,
               'last_change_batch', w.batch_id,
               'last_change_position', w.position,
               'problem', CASE WHEN w.state_key IS NULL THEN 'row missing'
                               WHEN w.after IS NULL
                                   THEN 'row deleted by the change log still exists'
                               WHEN to_jsonb(w.value) IS DISTINCT FROM w.after
                                   THEN 'value differs from the change log'
                               ELSE 'row names another change as its last' END)
    FROM written AS w
    WHERE (w.state_key IS NULL AND w.after IS NOT NULL)
       OR (w.state_key IS NOT NULL AND to_jsonb(w.value) IS DISTINCT FROM w.after)
       OR (w.state_key IS NOT NULL AND w.after IS NOT NULL AND w.names_another)
    UNION ALL
    -- The value is compared as a number only where a minimum is declared: the table's values
    -- may be of any type.
    SELECT 'minimum ' || r.sql_name, w.state_key, 0, 0, 0,
           json_build_object(
               'key', w.state_key,
               'value', ledger_money_text(
                   CAST(CAST(w.value AS text) AS numeric), u.unit_code, u.unit_precision),
               'minimum', ledger_money_text(r.minimum, u.unit_code, u.unit_precision))
    FROM written AS w
    CROSS JOIN declared AS u
    JOIN ledger_declared_invariants AS r
      ON r.kind = 'minimum' AND r.table_name = u.table_name
    WHERE CAST(CAST(w.value AS text) AS numeric) < r.minimum
    UNION ALL
    SELECT 'chain', c.key, c.batch_id, c.position, c.seq,
           json_build_object(
               'key', c.key,
               'batch_id', c.batch_id,
               'position', c.position,
               'seq', c.seq,
               'before', c.before,
               'previous_after', c.previous_after,
               'problem', CASE WHEN c.first_ever THEN 'first change does not start from nothing'
                               WHEN c.missing IS NOT NULL THEN c.missing
                               ELSE 'before differs from the after of the change before'
                          END)
    FROM chained AS c
    WHERE c.before IS DISTINCT FROM c.previous_after OR c.missing IS NOT NULL
)
SELECT f.rule, f.finding
FROM findings AS f
ORDER BY f.rule, f.key, f.batch_id, f.position, f.seq
