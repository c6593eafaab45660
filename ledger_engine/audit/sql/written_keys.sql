-- Rows (rule, finding) about the keys of one declared table written in the batch suite's
-- scope, for the rules that share this query (a finding is a JSON object whose fields are
-- what the rule's finding names, in that order):
--   'fold': keys whose row is not the `after` of their last change (the scope's last batch is
--     the newest in the snapshot the rule reads; change-log rows of a later batch would have
--     no batch row, the contiguity rule's finding);
--   'minimum <invariant>', for each declared `minimum` invariant of the table: keys whose
--     value is below its minimum, read from ledger_declared_invariants (the value and the
--     minimum as a person reads them in the table's declared unit: ledger_money_text);
--   'chain': changes whose `before` is not the `after` of the key's change before them (for
--     a key's first change ever: not NULL). The change before is found, in this order: by a
--     window over the key's changes in scope and in the recent batches before it, which the
--     last passing audit proved (see ledger_engine/audit/last_changes.py); else through the
--     audits' pointer to the key's last change (the pointers of all such keys found by one
--     probe of the pointers' primary key with the keys' array, then a primary-key probe each
--     into the change log), a pointer to a change that is not there being a finding; none
--     of these: the key's first change ever. When the pointers do not reach the batch before
--     the scope, the change is looked up in the change log by key.
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
pointers AS MATERIALIZED (
    -- The recent batches are read with the scope only when the pointers reach the batch
    -- before it, and when the scope has a batch at all.
    SELECT p.through = scope.first_batch - 1 AS current,
           CASE WHEN p.through = scope.first_batch - 1
                     AND scope.first_batch <= scope.last_batch THEN p.recent_from
                ELSE scope.first_batch END AS read_from
    FROM scope
    LEFT JOIN ledger_audit_last_changes_through AS p ON true
),
in_scope AS MATERIALIZED (
    SELECT * FROM (
        SELECT c.key, c.batch_id, c.position, c.seq, c.before, c.after,
               lag(c.after) OVER w AS previous_after,
               row_number() OVER w AS nth,
               lead(c.batch_id) OVER w IS NULL AS last
        FROM (
            SELECT s.table_name, s.key, s.batch_id, s.position, s.seq, s.before, s.after
            FROM ledger_change_log AS s
            WHERE s.batch_id BETWEEN (SELECT pointers.read_from FROM pointers)
                                 AND (SELECT scope.last_batch FROM scope)
            OFFSET 0
        ) AS c
        WHERE c.table_name = (SELECT declared.table_name FROM declared)
        WINDOW w AS (PARTITION BY c.key COLLATE "C" ORDER BY c.batch_id, c.position, c.seq)
    ) AS changes
    WHERE changes.batch_id >= (SELECT scope.first_batch FROM scope)
),
last_changes AS MATERIALIZED (
    SELECT i.key, i.after, i.batch_id, i.position FROM in_scope AS i WHERE i.last
),
state_rows AS MATERIALIZED (
    SELECT CAST(t.key AS text) AS key, t.value
    FROM "{table}" AS t
    WHERE t.key = ANY (CAST(ARRAY(SELECT l.key FROM last_changes AS l) AS {key_type}[]))
),
written AS (
    SELECT l.key, l.after, l.batch_id, l.position, s.key AS state_key, s.value
    FROM last_changes AS l
    LEFT JOIN state_rows AS s ON s.key = l.key
),
pointed AS MATERIALIZED (
    -- Each first key's pointer, all found by one probe of the pointers' primary key with
    -- the keys' array, then the change it points at by the change log's primary key alone
    -- (the key compared after, not joined on: joined on, it lets PostgreSQL read all the
    -- key's entries through the index on keys instead).
    SELECT p.key, p.batch_id, p.position, p.seq,
           CASE WHEN l.table_name = p.table_name AND l.key = p.key THEN l.after END AS after,
           COALESCE(l.table_name = p.table_name AND l.key = p.key, false) AS found
    FROM ledger_audit_last_changes AS p
    LEFT JOIN LATERAL (
        SELECT x.table_name, x.key, x.after
        FROM ledger_change_log AS x
        WHERE x.batch_id = p.batch_id AND x.position = p.position AND x.seq = p.seq
        LIMIT 1
    ) AS l ON true
    WHERE (SELECT pointers.current FROM pointers)
      AND p.table_name = (SELECT declared.table_name FROM declared)
      AND p.batch_id < (SELECT scope.first_batch FROM scope)
      AND p.key = ANY (ARRAY(SELECT f.key FROM in_scope AS f WHERE f.nth = 1))
),
looked_up AS MATERIALIZED (
    -- Without current pointers: each first key's last change before the scope, by key.
    SELECT f.key, c.batch_id, c.position, c.seq, c.after, true AS found
    FROM in_scope AS f
    CROSS JOIN LATERAL (
        SELECT c.batch_id, c.position, c.seq, c.after
        FROM ledger_change_log AS c
        WHERE c.table_name = (SELECT declared.table_name FROM declared) AND c.key = f.key
          AND c.batch_id < (SELECT scope.first_batch FROM scope)
        ORDER BY c.batch_id DESC, c.position DESC, c.seq DESC
        LIMIT 1
    ) AS c
    WHERE NOT (SELECT pointers.current FROM pointers) AND f.nth = 1
),
firsts AS (
    SELECT f.key, f.batch_id, f.position, f.seq, f.before,
           earlier.after AS previous_after,
           earlier.key IS NULL AS first_ever,
           CASE WHEN NOT earlier.found
                THEN 'its change before the scope (batch ' || earlier.batch_id
                     || ', position ' || earlier.position || ', seq ' || earlier.seq
                     || ') is missing from the change log'
           END AS missing
    FROM in_scope AS f
    LEFT JOIN (
        SELECT * FROM pointed
        UNION ALL
        SELECT * FROM looked_up
    ) AS earlier ON earlier.key = f.key
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
                               ELSE 'value differs from the change log' END)
    FROM written AS w
    WHERE (w.state_key IS NULL AND w.after IS NOT NULL)
       OR (w.state_key IS NOT NULL AND to_jsonb(w.value) IS DISTINCT FROM w.after)
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
