"""The batch audit's Great Expectations suite, `ledger_batch_integrity`: every rule of the
whole-ledger suite (`ledger_engine.audit.expectations`), over the batches in scope only.

The scope is data: the query asset `audit_scope` is the view `ledger_audit_scope`
(`sql/0011_audit_marks.sql`), one row holding the first batch after the last passing audit's
mark and the newest batch; `{batch}` in each rule stands for that row. A rule's cost is that
of the batches in scope (index range scans of the log tables' primary keys, which start with
`batch_id`), plus one index probe per key or request id met in scope; none reads a whole
table, so the suite costs the same on a ledger of a thousand events or of millions.

What lies before the scope was proven by earlier audits; the scope's rules prove that it
continues from there: a key's first change in scope starts from the `after` of its change
before the scope, the first batch row in scope names the hash of the batch before it, and
each key written in scope holds what its last change says. A row changed behind the engine's
back outside the scope (a key no batch in scope wrote) is the full audit's to find.

`expectations/README.md` lists the rules, what each holds and what its findings name.

One direction of the accounting rule is left to the full audit: an executed request id whose
row points into the scope while no event of that id exists there (`ledger_requests` has no
index by batch, so such a row cannot be found without reading the table).

Each rule reads `{batch}` once, into a materialized CTE `scope`, and bounds every log table
by `(SELECT scope.first_batch FROM scope)` and `(SELECT scope.last_batch FROM scope)`: values
PostgreSQL knows before it scans, so it scans only the primary key's range (every range is
closed at both ends, and read by a bitmap scan under the session settings of
`ledger_engine.audit.session`). Lookups outside the scope (a key's earlier change, a request
id's other events, a state row) are LATERAL subqueries with LIMIT or OFFSET 0, so that the
planner cannot turn them into a join over a whole table. `ledger_engine.audit.batch_verify`
runs two of these rules directly, with the scope bound as parameters (`bound_to_scope`).

Each rule's query runs once (`rows_once`: Great Expectations' own expectation runs it twice),
and the three rules about the keys of a table written in scope (their last change, their
chain, their minimum) share one query, which reads those keys' changes and rows once
(`written_keys_query`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from ledger_engine.audit.chain import GENESIS_HASH
from ledger_engine.audit.expectations import (
    _ONE_PER_EVENT,
    DEFAULT_PROJECT_ROOT,
    RUN_PAGE,
    SuiteSpec,
    rows_expectation,
    rule_expectation,
    run_suite,
)
from ledger_engine.audit.findings import CheckResult
from ledger_engine.audit.session import BATCH_AUDIT_SETTINGS
from ledger_engine.core.declarations import StreamingLedger, Table
from ledger_engine.core.invariants import BALANCED, CONSERVED, MINIMUM, Invariant

if TYPE_CHECKING:
    from great_expectations.expectations.expectation import Expectation


SUITE_NAME = "ledger_batch_integrity"
ASSET_NAME = "audit_scope"
ASSET_QUERY = "SELECT first_batch, last_batch FROM ledger_audit_scope"
BATCH_DEFINITION_NAME = "the_audit_scope"
VALIDATION_DEFINITION_NAME = "ledger_batch_integrity_on_audit_scope"
CHECKPOINT_NAME = "ledger_batch_integrity"
RESULT_FORMAT = {"result_format": "COMPLETE"}

# The log tables whose primary key starts with `batch_id`, as the whole-ledger suite's.
BATCH_LOG_TABLES = (
    "ledger_events",
    "ledger_change_log",
    "ledger_results",
    "ledger_rejections",
    "ledger_duplicates",
)
# Every rule starts with this: the scope's one row, read once.
_SCOPE = """WITH scope AS MATERIALIZED (
    SELECT s.first_batch, s.last_batch FROM {batch} AS s
)"""
_FIRST = "(SELECT scope.first_batch FROM scope)"
_LAST = "(SELECT scope.last_batch FROM scope)"
_IN_SCOPE = f"BETWEEN {_FIRST} AND {_LAST}"
_NO_BATCH_AFTER = "9223372036854775807"  # the greatest bigint: no batch id lies beyond it
# The direct form of `{batch}`: the scope bound as parameters (`bound_to_scope`).
_BOUND_SCOPE = (
    "(SELECT CAST(:first_batch AS bigint) AS first_batch,"
    " CAST(:last_batch AS bigint) AS last_batch)"
)


def bound_to_scope(query: str) -> str:
    """A rule's SQL with `{batch}` replaced by the parameters `:first_batch`, `:last_batch`."""
    return query.format(batch=_BOUND_SCOPE)


# --- The rules, as SQL ---------------------------------------------------------------------
# As in the whole-ledger suite, Great Expectations fills in `{batch}` with `str.format` and
# leaves its aliasing to queries that contain a JOIN: every rule here has one.


def _entries(columns: str, first: str = _FIRST) -> str:
    """A FROM item (give it an alias): the change-log entries of batches `first` (an SQL
    expression, the scope's first batch unless given) to the scope's last, with `columns` (of
    alias `s`).

    They are read along the primary key (batch_id, position, seq) by batch alone, and a table
    name is applied after that scan (`OFFSET 0` keeps PostgreSQL from moving it into the
    scan): given a table name too, it may pick an index on the table name and key instead,
    which means reading every entry of the table (measured: the whole table's entries on a
    ledger of 680,000 changes, for 16,000 in scope). The range is closed at both ends: for a
    range of two unknown bounds PostgreSQL guesses 0.5% of the table and reads it by index,
    for an open one a third, and reads the whole table. Each query reads the scope's entries
    itself rather than from a shared materialized CTE, which wrote them all (both tables,
    every column) to a temporary file first."""
    return f"""(
        SELECT {columns}
        FROM ledger_change_log AS s
        WHERE s.batch_id BETWEEN {first} AND {_LAST}
        OFFSET 0
    )"""


# The rules about the keys of a table written in scope, which share one query: each reads a
# key's changes in order and its row in the state table (`written_keys_query`).
FOLD, CHAIN = "fold", "chain"
_IDENTIFIER = re.compile(r"[a-z][a-z0-9_]{0,62}")


def _identifier(sql_name: str) -> str:
    """`sql_name`, checked at the boundary: only identifiers the platform derived (see
    `ledger_engine.core.naming`) are ever written into a rule's SQL."""
    if not _IDENTIFIER.fullmatch(sql_name):
        raise ValueError(f"{sql_name!r} is not an SQL identifier the platform derived")
    return sql_name


def minimum_rule(invariant: Invariant) -> str:
    """The rule of `written_keys_query` for a declared `minimum` invariant."""
    return f"minimum {_identifier(invariant.sql_name)}"


def _below_minimum(invariant: Invariant) -> str:
    """A findings branch of `written_keys_query`: written keys below `invariant`'s minimum."""
    return f"""
    UNION ALL
    SELECT '{minimum_rule(invariant)}', w.state_key, 0, 0, 0,
           json_build_object('key', w.state_key, 'value', w.value, 'minimum', r.minimum)
    FROM written AS w
    CROSS JOIN (
        SELECT r.minimum FROM ledger_declared_invariants AS r
        WHERE r.sql_name = '{_identifier(invariant.sql_name)}'
    ) AS r
    WHERE w.value < r.minimum"""


def written_keys_query(table: Table, minimums: Sequence[Invariant] = ()) -> str:
    """Rows (`rule`, `finding`) about the keys of `table` written in scope, for three rules
    (`rows_once.UnexpectedRowsOfRuleExpectation` gives each its own):

    - `fold`: keys whose row in `table` is not the `after` of their last change. That is
      their last change in scope: the scope's last batch is the newest in the snapshot the
      rule reads (`{batch}` is read in the same statement), and change-log rows of a later
      batch would have no batch row (the contiguity rule's finding);
    - `minimum_rule(invariant)`, for each declared `minimum` invariant of `table` (given in
      `minimums`): keys whose value in `table` is below the invariant's minimum, which the
      rule reads from `ledger_declared_invariants`;
    - `chain`: changes whose `before` is not the `after` of the key's change before them (for
      a key's first change ever: not NULL). The change before is found, in this order: by a
      window over the key's changes in scope and in the recent batches before it, which the
      last passing audit proved (usually the one batch before the scope: see
      `ledger_engine.audit.last_changes`); else through the audits' pointer to the key's last
      change (the pointers of all such keys found by one probe of the pointers' primary key
      with the keys' array, then a primary-key probe each into the change log, whatever the
      keys' history), the change log's value read where it points, a pointer to a change
      that is not there being a finding; none of these: the key's first change ever. When
      the pointers do not reach the batch before the scope, the change is looked up in the
      change log by key.

    One read of the changes (along the primary key, as `_entries` explains), one sort by
    key (bytewise: any order groups a key's changes, and it sorts faster than the database's
    collation), one probe of each key's row for both `fold` and `minimum`. A finding is a
    JSON object whose fields are what the rule's finding names, in that order."""
    assert all(m.kind == MINIMUM and m.table == table.name for m in minimums), minimums
    sql_name = _identifier(table.sql_name)
    # The table's name as declared, read once: no label is ever written into the SQL.
    name = "(SELECT declared.table_name FROM declared)"
    columns = "s.table_name, s.key, s.batch_id, s.position, s.seq, s.before, s.after"
    keys = "ARRAY(SELECT l.key FROM last_changes AS l)"
    if table.key_type is int:  # the change log keeps keys as text
        keys = f"CAST({keys} AS bigint[])"
    below = "".join(_below_minimum(m) for m in minimums)
    return f"""{_SCOPE},
declared AS MATERIALIZED (
    SELECT d.table_name FROM ledger_declared_tables AS d WHERE d.sql_name = '{sql_name}'
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
        FROM {_entries(columns, "(SELECT pointers.read_from FROM pointers)")} AS c
        WHERE c.table_name = {name}
        WINDOW w AS (PARTITION BY c.key COLLATE "C" ORDER BY c.batch_id, c.position, c.seq)
    ) AS changes
    WHERE changes.batch_id >= {_FIRST}
),
last_changes AS MATERIALIZED (
    SELECT i.key, i.after, i.batch_id, i.position FROM in_scope AS i WHERE i.last
),
state_rows AS MATERIALIZED (
    SELECT CAST(t.key AS text) AS key, t.value
    FROM "{sql_name}" AS t
    WHERE t.key = ANY ({keys})
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
      AND p.table_name = {name} AND p.batch_id < {_FIRST}
      AND p.key = ANY (ARRAY(SELECT f.key FROM in_scope AS f WHERE f.nth = 1))
),
looked_up AS MATERIALIZED (
    -- Without current pointers: each first key's last change before the scope, by key.
    SELECT f.key, c.batch_id, c.position, c.seq, c.after, true AS found
    FROM in_scope AS f
    CROSS JOIN LATERAL (
        SELECT c.batch_id, c.position, c.seq, c.after
        FROM ledger_change_log AS c
        WHERE c.table_name = {name} AND c.key = f.key AND c.batch_id < {_FIRST}
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
    SELECT '{FOLD}', w.key, w.batch_id, w.position, 0,
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
{below}
    UNION ALL
    SELECT '{CHAIN}', c.key, c.batch_id, c.position, c.seq,
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
""".strip()


_NET = "COALESCE(CAST(c.after AS numeric), 0) - COALESCE(CAST(c.before AS numeric), 0)"


def conservation_rule(invariant: Invariant) -> str:
    """The rule of `money_in_scope_query` for a declared `conserved` invariant."""
    return f"conserved {_identifier(invariant.sql_name)}"


def balance_rule(invariant: Invariant) -> str:
    """The rule of `money_in_scope_query` for a declared `balanced` invariant."""
    return f"balanced {_identifier(invariant.sql_name)}"


def money_in_scope_query(invariants: Sequence[Invariant], tables: Sequence[Table]) -> str:
    """Rows (`rule`, `finding`) of the declared `conserved` and `balanced` invariants
    (`invariants`, over `tables`), which share one query
    (`rows_once.UnexpectedRowsOfRuleExpectation` gives each its own):

    - `conservation_rule(invariant)`: batches in scope whose net change of the invariant's
      table in the change log (after minus before, a missing row counting as 0) differs from
      the sum of its source fields over the applied events of its source streams: money is
      conserved batch by batch, so the table's total follows its sources;
    - `balance_rule(invariant)`: applied events of the invariant's streams in scope whose
      change-log entries in its table do not sum to zero.

    The scope's change-log entries are read once and summed per event in one pass, a count
    and a sum per table (grouping by event alone halves the groups); a batch's sums follow
    from its events'. Only the events whose entries do not net to zero (deposits, mostly)
    are then looked up, one primary-key probe each, for their stream and outcome; the
    sources are summed per batch, for every invariant at once, in one read of the scope's
    events. The invariants' tables, streams and fields are read from
    `ledger_declared_invariants`: each table is named in the SQL by its position alone."""
    assert invariants and all(i.kind in (CONSERVED, BALANCED) for i in invariants)
    index = {t.name: k for k, t in enumerate(tables)}
    sums = ",\n           ".join(
        f"COUNT(*) FILTER (WHERE c.table_name = {_declared_table(t)}) AS changes_{k},\n"
        f"           SUM({_NET}) FILTER (WHERE c.table_name = {_declared_table(t)}) AS net_{k}"
        for k, t in enumerate(tables)
    )
    moving = " OR ".join(f"n.net_{k} <> 0" for k in range(len(tables)))
    findings = [
        _conservation_findings(i, index[i.table])
        if i.kind == CONSERVED
        else _balance_findings(i, index[i.table])
        for i in invariants
    ]
    union = "\n    UNION ALL\n    ".join(findings)
    return f"""{_SCOPE},
sources AS MATERIALIZED (
    SELECT r.sql_name AS invariant, r.kind, source.stream, source.field
    FROM ledger_declared_invariants AS r
    CROSS JOIN LATERAL jsonb_to_recordset(r.sources) AS source (stream text, field text)
    WHERE r.kind IN ('{CONSERVED}', '{BALANCED}')
),
nets AS MATERIALIZED (
    SELECT c.batch_id, c.position,
           {sums}
    FROM {_entries("s.table_name, s.batch_id, s.position, s.before, s.after")} AS c
    GROUP BY c.batch_id, c.position
),
moved AS MATERIALIZED (
    SELECT n.*, e.request_id, e.stream
    FROM nets AS n
    JOIN LATERAL (
        SELECT x.request_id, x.stream
        FROM ledger_events AS x
        WHERE x.batch_id = n.batch_id AND x.position = n.position
          AND x.outcome = 'applied'
          AND x.stream IN (SELECT s.stream FROM sources AS s WHERE s.kind = '{BALANCED}')
        LIMIT 1
    ) AS e ON true
    WHERE {moving}
),
deposits AS MATERIALIZED (
    SELECT e.batch_id, s.invariant, SUM(CAST(e.payload ->> s.field AS numeric)) AS total
    FROM ledger_events AS e
    JOIN sources AS s ON s.stream = e.stream AND s.kind = '{CONSERVED}'
    WHERE e.batch_id {_IN_SCOPE} AND e.outcome = 'applied'
    GROUP BY e.batch_id, s.invariant
),
findings (rule, batch_id, position, finding) AS (
    {union}
)
SELECT f.rule, f.finding
FROM findings AS f
ORDER BY f.rule, f.batch_id, f.position
""".strip()


def _declared_table(table: Table) -> str:
    """The SQL for `table`'s declared name, read from `ledger_declared_tables` by its
    identifier (evaluated once per statement)."""
    return (
        "(SELECT d.table_name FROM ledger_declared_tables AS d"
        f" WHERE d.sql_name = '{_identifier(table.sql_name)}')"
    )


def _conservation_findings(invariant: Invariant, k: int) -> str:
    return f"""SELECT '{conservation_rule(invariant)}', b.batch_id, 0,
           json_build_object(
               'batch_id', b.batch_id,
               'net_change', b.net_change,
               'sources', b.deposits,
               'difference', b.net_change - b.deposits)
    FROM (
        SELECT COALESCE(c.batch_id, d.batch_id) AS batch_id,
               COALESCE(c.net_change, 0) AS net_change,
               COALESCE(d.total, 0) AS deposits
        FROM (
            SELECT n.batch_id, SUM(n.net_{k}) AS net_change
            FROM nets AS n
            WHERE n.changes_{k} > 0
            GROUP BY n.batch_id
        ) AS c
        FULL OUTER JOIN (
            SELECT d.batch_id, d.total FROM deposits AS d
            WHERE d.invariant = '{_identifier(invariant.sql_name)}'
        ) AS d ON d.batch_id = c.batch_id
    ) AS b
    WHERE b.net_change <> b.deposits"""


def _balance_findings(invariant: Invariant, k: int) -> str:
    return f"""SELECT '{balance_rule(invariant)}', m.batch_id, m.position,
           json_build_object(
               'request_id', m.request_id,
               'batch_id', m.batch_id,
               'position', m.position,
               'stream', m.stream,
               'changes', m.changes_{k},
               'net_change', m.net_{k})
    FROM moved AS m
    WHERE m.net_{k} <> 0
      AND m.stream IN (
          SELECT s.stream FROM sources AS s
          WHERE s.invariant = '{_identifier(invariant.sql_name)}'
      )"""


def accounted_in_scope_query() -> str:
    """Events of the scope not accounted for exactly once, named by batch and position (with
    the event's outcome and request id, if it exists) and what is wrong there: the whole-ledger
    rule's branches over the scope's batches (see `expectations.accounted_query`), except
    executed request ids pointing into the scope without an event of theirs (module doc)."""
    branches = [_one_to_one_branch(t, k, o) for t, k, o in _ONE_PER_EVENT]
    branches.append(_executed_request_branch())
    branches += [
        _applied_only_branch("ledger_change_log", "change-log entries"),
        _applied_only_branch("ledger_results", "results"),
    ]
    branches.append(_position_gap_branch())
    problems = "\n    UNION ALL\n    ".join(branches)
    return f"""{_SCOPE},
events AS MATERIALIZED (
    SELECT e.batch_id, e.position, e.outcome, e.request_id
    FROM ledger_events AS e
    WHERE e.batch_id {_IN_SCOPE}
),
requests AS MATERIALIZED (
    SELECT r.request_id, r.batch_id, r.position, r.outcome
    FROM ledger_requests AS r
    WHERE r.request_id = ANY (ARRAY(
        SELECT e.request_id FROM events AS e
        WHERE e.outcome <> 'duplicate' AND e.request_id IS NOT NULL
    ))
),
problems AS (
    {problems}
)
SELECT p.batch_id, p.position, e.outcome, e.request_id,
       string_agg(DISTINCT p.problem, '; ') AS problem
FROM problems AS p
LEFT JOIN events AS e ON e.batch_id = p.batch_id AND e.position = p.position
GROUP BY p.batch_id, p.position, e.outcome, e.request_id
ORDER BY p.batch_id, p.position
""".strip()


def _one_to_one_branch(table: str, kind: str, outcome: str) -> str:
    return f"""SELECT COALESCE(e.batch_id, x.batch_id) AS batch_id,
           COALESCE(e.position, x.position) AS position,
           CASE WHEN x.position IS NULL THEN '{outcome} event without its {kind}'
                WHEN e.position IS NULL THEN '{kind} without its event'
                WHEN e.outcome <> '{outcome}' THEN '{kind} of an event that was ' || e.outcome
                ELSE '{kind} names request id ' || quote_nullable(x.request_id)
           END AS problem
    FROM events AS e
    FULL OUTER JOIN (
        SELECT t.batch_id, t.position, t.request_id FROM {table} AS t
        WHERE t.batch_id {_IN_SCOPE}
    ) AS x ON x.batch_id = e.batch_id AND x.position = e.position
    WHERE (x.position IS NULL AND e.outcome = '{outcome}')
       OR e.position IS NULL
       OR (x.position IS NOT NULL AND e.outcome <> '{outcome}')
       OR (x.position IS NOT NULL AND x.request_id IS DISTINCT FROM e.request_id)"""


def _executed_request_branch() -> str:
    # The executed request ids of the scope's executed events, read in one bitmap scan of
    # ledger_requests' primary key for all of them (`requests`), met by a hash join.
    return """SELECT e.batch_id, e.position,
           CASE WHEN q.request_id IS NULL
                    THEN 'executed event without its executed request id'
                WHEN q.batch_id <> e.batch_id OR q.position <> e.position
                    THEN 'its executed request id points to batch ' || q.batch_id
                         || ', position ' || q.position
                ELSE 'executed request id says ' || q.outcome || ', the event was ' || e.outcome
           END AS problem
    FROM events AS e
    LEFT JOIN requests AS q ON q.request_id = e.request_id
    WHERE e.outcome <> 'duplicate' AND e.request_id IS NOT NULL
      AND (q.request_id IS NULL
           OR q.batch_id <> e.batch_id
           OR q.position <> e.position
           OR q.outcome <> e.outcome)"""


def _applied_only_branch(table: str, kind: str) -> str:
    return f"""SELECT DISTINCT x.batch_id, x.position,
           CASE WHEN e.position IS NULL THEN '{kind} without their event'
                WHEN e.outcome <> 'applied' THEN '{kind} of an event that was ' || e.outcome
                ELSE '{kind} name request id ' || quote_nullable(x.request_id)
           END AS problem
    FROM {table} AS x
    LEFT JOIN events AS e ON e.batch_id = x.batch_id AND e.position = x.position
    WHERE x.batch_id {_IN_SCOPE}
      AND (e.position IS NULL
           OR e.outcome <> 'applied'
           OR x.request_id IS DISTINCT FROM e.request_id)"""


def _position_gap_branch() -> str:
    # Positions are read in order (a sort) only in batches whose events do not simply count
    # 0 .. n - 1, which one pass of counting finds.
    return """SELECT batch_id, previous + 1 AS position,
           CASE WHEN position = previous + 2 THEN 'no event at this position'
                ELSE 'no events at positions ' || (previous + 1) || ' to ' || (position - 1)
           END AS problem
    FROM (
        SELECT e.batch_id, e.position,
               COALESCE(lag(e.position) OVER (PARTITION BY e.batch_id ORDER BY e.position), -1)
                   AS previous
        FROM events AS e
        WHERE e.batch_id IN (
            SELECT g.batch_id FROM events AS g
            GROUP BY g.batch_id
            HAVING count(*) <> max(g.position) + 1 OR min(g.position) <> 0
        )
    ) AS positions
    WHERE position <> previous + 1"""


def unique_in_scope_query() -> str:
    """Request ids executed in scope that more than one executed event holds (anywhere in the
    ledger). The executed events of all the scope's request ids are read in one bitmap scan
    of the index on request ids, and counted by id; the events of an id held twice are then
    read again to name them."""
    return f"""{_SCOPE},
requested AS MATERIALIZED (
    SELECT DISTINCT e.request_id
    FROM ledger_events AS e
    WHERE e.batch_id {_IN_SCOPE} AND e.outcome <> 'duplicate' AND e.request_id IS NOT NULL
),
held_twice AS MATERIALIZED (
    SELECT x.request_id
    FROM ledger_events AS x
    WHERE x.request_id = ANY (ARRAY(SELECT r.request_id FROM requested AS r))
      AND x.outcome <> 'duplicate'
    GROUP BY x.request_id
    HAVING COUNT(*) > 1
)
SELECT x.request_id,
       COUNT(*) AS executed_events,
       string_agg(x.outcome || ' in batch ' || x.batch_id || ' at position ' || x.position, '; '
                  ORDER BY x.batch_id, x.position) AS events
FROM held_twice AS h
JOIN LATERAL (
    SELECT e.request_id, e.batch_id, e.position, e.outcome
    FROM ledger_events AS e
    WHERE e.request_id = h.request_id AND e.outcome <> 'duplicate'
    OFFSET 0
) AS x ON true
GROUP BY x.request_id
ORDER BY x.request_id
""".strip()


def contiguity_in_scope_query() -> str:
    """Batch ids missing from the batch before the scope to its last batch, and batches from
    the scope's first on that log tables hold rows of but that have no batch row.

    Such a batch is either missing from the scope's range (a gap found above: one probe per
    log table and missing id) or past the scope's last batch, which is the newest (one probe
    per log table, finding nothing unless rows were forged there): neither reads a log
    table's batch ids one by one, which would take an index scan per batch id. Both ranges are
    closed (`_NO_BATCH_AFTER`; a missing id as a range of one) for the reason `_entries`
    gives, and rows are counted rather than the first looked for: for `LIMIT 1` PostgreSQL
    reads the table from its start, hoping to meet one soon."""
    beyond = "\n    UNION ALL\n    ".join(
        f"""SELECT DISTINCT '{table}', t.batch_id FROM {table} AS t
    WHERE t.batch_id BETWEEN {_LAST} + 1 AND {_NO_BATCH_AFTER}
    UNION ALL
    SELECT '{table}', m.batch_id FROM missing AS m
    CROSS JOIN LATERAL (
        SELECT count(*) AS found FROM {table} AS t
        WHERE t.batch_id BETWEEN m.batch_id AND m.batch_id
    ) AS t
    WHERE t.found > 0"""
        for table in BATCH_LOG_TABLES
    )
    start = f"GREATEST({_FIRST} - 1, 0)"  # the batch before the scope, proven earlier
    return f"""{_SCOPE},
gaps AS (
    SELECT previous + 1 AS first_missing, batch_id - 1 AS last_missing
    FROM (
        SELECT b.batch_id,
               COALESCE(lag(b.batch_id) OVER (ORDER BY b.batch_id), {start} - 1) AS previous
        FROM ledger_batches AS b
        WHERE b.batch_id BETWEEN {start} AND {_LAST}
        UNION ALL
        -- past the last row in range: the scope's last batch must be there too
        SELECT {_LAST} + 1, COALESCE(MAX(b.batch_id), {start} - 1)
        FROM ledger_batches AS b
        WHERE b.batch_id BETWEEN {start} AND {_LAST}
    ) AS ids
    WHERE batch_id <> previous + 1
),
missing AS (
    SELECT m.batch_id
    FROM gaps AS g
    CROSS JOIN LATERAL generate_series(GREATEST(g.first_missing, {_FIRST}),
                                       LEAST(g.last_missing, {_LAST})) AS m (batch_id)
),
logged (table_name, batch_id) AS (
    {beyond}
)
SELECT first_missing AS batch_id, 'ledger_batches' AS table_name,
       CASE WHEN first_missing = last_missing THEN 'no batch row for this batch id'
            ELSE 'no batch rows for batch ids ' || first_missing || ' to ' || last_missing
       END AS problem
FROM gaps
UNION ALL
SELECT logged.batch_id, logged.table_name, 'rows of a batch that has no batch row'
FROM logged
LEFT JOIN LATERAL (
    SELECT b.batch_id FROM ledger_batches AS b WHERE b.batch_id = logged.batch_id LIMIT 1
) AS b ON true
WHERE b.batch_id IS NULL
ORDER BY 1, 2
""".strip()


def counts_in_scope_query() -> str:
    """Batch rows in scope whose recorded counts differ from the rows they describe."""
    return f"""{_SCOPE},
events AS (
    SELECT e.batch_id,
           COUNT(*) AS events_ingested,
           COUNT(*) FILTER (WHERE e.outcome = 'applied') AS applied,
           COUNT(*) FILTER (WHERE e.outcome = 'rejected') AS rejected,
           COUNT(*) FILTER (WHERE e.outcome = 'duplicate') AS duplicates
    FROM ledger_events AS e
    WHERE e.batch_id {_IN_SCOPE}
    GROUP BY e.batch_id
),
changes AS (
    SELECT c.batch_id, COUNT(*) AS changes FROM ledger_change_log AS c
    WHERE c.batch_id {_IN_SCOPE}
    GROUP BY c.batch_id
),
results AS (
    SELECT r.batch_id, COUNT(*) AS results FROM ledger_results AS r
    WHERE r.batch_id {_IN_SCOPE}
    GROUP BY r.batch_id
)
SELECT b.batch_id, counted.field, counted.recorded, counted.found
FROM ledger_batches AS b
LEFT JOIN events AS e ON e.batch_id = b.batch_id
LEFT JOIN changes AS c ON c.batch_id = b.batch_id
LEFT JOIN results AS r ON r.batch_id = b.batch_id
CROSS JOIN LATERAL (
    VALUES ('events_ingested', b.events_ingested, COALESCE(e.events_ingested, 0)),
           ('applied', b.applied, COALESCE(e.applied, 0)),
           ('rejected', b.rejected, COALESCE(e.rejected, 0)),
           ('duplicates', b.duplicates, COALESCE(e.duplicates, 0)),
           ('changes', b.changes, COALESCE(c.changes, 0)),
           ('results', b.results, COALESCE(r.results, 0))
) AS counted (field, recorded, found)
WHERE b.batch_id {_IN_SCOPE} AND counted.recorded <> counted.found
ORDER BY b.batch_id, counted.field
""".strip()


def chain_by_hash_in_scope_query() -> str:
    """Batch rows in scope whose `prev_hash` is not the `batch_hash` of the batch before (for
    the first in scope: the batch before the scope; for batch 0: the genesis hash)."""
    return f"""{_SCOPE}
SELECT b.batch_id,
       left(b.prev_hash, 16) AS prev_hash,
       left(CASE WHEN b.batch_id = 0 THEN '{GENESIS_HASH}' ELSE earlier.batch_hash END, 16)
           AS hash_of_batch_before,
       CASE WHEN b.batch_id = 0 THEN 'the first batch does not start from the genesis hash'
            WHEN earlier.batch_id IS NULL THEN 'the batch before is missing'
            ELSE 'prev_hash is not the batch_hash of the batch before'
       END AS problem
FROM ledger_batches AS b
LEFT JOIN LATERAL (
    SELECT x.batch_id, x.batch_hash FROM ledger_batches AS x
    WHERE x.batch_id = b.batch_id - 1 LIMIT 1
) AS earlier ON true
WHERE b.batch_id {_IN_SCOPE}
  AND b.prev_hash IS DISTINCT FROM
      CASE WHEN b.batch_id = 0 THEN '{GENESIS_HASH}' ELSE earlier.batch_hash END
ORDER BY b.batch_id
""".strip()


# --- The suite -----------------------------------------------------------------------------


def build_batch_expectations(ledger: StreamingLedger) -> list[Expectation]:
    """The batch suite's expectations in report order, each with its short name in `meta`:
    the platform's rules for each declared table, the declared invariants over the scope,
    then the rules of the logs."""
    rows = partial(rows_expectation, once=True)
    of_rule = rule_expectation
    scope = "the batches after the last passing audit (the view ledger_audit_scope)"
    tables = list(ledger.tables.values())
    invariants = list(ledger.invariants.values())
    minimums = {
        t.name: [i for i in invariants if i.kind == MINIMUM and i.table == t.name] for t in tables
    }
    written = {t.name: written_keys_query(t, minimums[t.name]) for t in tables}
    expectations = [
        of_rule(
            FOLD,
            f"{t.name} keys written in scope hold their last change",
            written[t.name],
            f"Each key of `{t.name}` written in {scope} holds the `after` of its last "
            "change-log entry, or has no row if that is NULL.",
        )
        for t in tables
    ]
    expectations += [
        of_rule(
            CHAIN,
            f"{t.name} change log in scope continues its chain",
            written[t.name],
            f"Each change-log entry of `{t.name}` in {scope} starts from the `after` of the "
            "key's entry before it, found before the scope if need be; a key's first entry "
            "ever starts from nothing.",
        )
        for t in tables
    ]
    moving = [i for i in invariants if i.kind in (CONSERVED, BALANCED)]
    money = money_in_scope_query(moving, tables) if moving else ""
    for invariant in invariants:
        if invariant.kind == MINIMUM:
            rule, query = minimum_rule(invariant), written[invariant.table]
        else:
            rule = (conservation_rule if invariant.kind == CONSERVED else balance_rule)(invariant)
            query = money
        expectations.append(
            of_rule(
                rule,
                f"{invariant.name}, in scope",
                query,
                f"Declared by the application, over {scope} (a conserved total batch by "
                f"batch, a minimum over the keys written): {invariant.describe()}",
            )
        )
    expectations += [
        rows(
            "every event in scope is accounted for exactly once",
            accounted_in_scope_query(),
            f"In {scope}, each batch's events fill positions 0, 1, 2, ... without a gap; a "
            "rejected event has its rejection, a duplicate its duplicate row, an executed "
            "event with a request id its executed request id, pointing back to it; every "
            "rejection, duplicate row, change-log entry and result belongs to an event of the "
            "matching outcome and names its request id.",
        ),
        rows(
            "request ids in scope are unique among executed events",
            unique_in_scope_query(),
            f"No request id executed in {scope} belongs to another applied or rejected event.",
        ),
        rows(
            "batch rows in scope are contiguous",
            contiguity_in_scope_query(),
            "Batch ids run on without a gap from the batch before the scope to the newest, and "
            "no log table holds rows of a batch from the scope on that has no batch row.",
        ),
        rows(
            "batch counts in scope equal the rows they describe",
            counts_in_scope_query(),
            f"Each batch row of {scope} has counts equal to the rows of its batch in the event "
            "log, change log and results.",
        ),
        rows(
            "batch rows in scope chain by hash",
            chain_by_hash_in_scope_query(),
            f"Each batch row of {scope} names the `batch_hash` of the batch before it; the "
            "first batch's is the genesis hash.",
        ),
    ]
    return expectations


def batch_integrity_suite(ledger: StreamingLedger) -> SuiteSpec:
    """The batch audit's suite of `ledger` on the `audit_scope` asset of the same data source."""
    return SuiteSpec(
        SUITE_NAME,
        ASSET_NAME,
        ASSET_QUERY,
        BATCH_DEFINITION_NAME,
        VALIDATION_DEFINITION_NAME,
        CHECKPOINT_NAME,
        RESULT_FORMAT,
        lambda: build_batch_expectations(ledger),
        BATCH_AUDIT_SETTINGS,
        RUN_PAGE,
    )


def run_batch_expectations(
    database_url: str, ledger: StreamingLedger, project_root: Path = DEFAULT_PROJECT_ROOT
) -> list[CheckResult]:
    """Run the `ledger_batch_integrity` checkpoint against `database_url` and render its Data
    Docs page (see `expectations.run_suite`): the run's page only, which its checks link to.
    The index and the suites' pages are the full audit's to rebuild: rebuilding the index
    reads the latest hundred validation results, a second of every batch audit."""
    return run_suite(batch_integrity_suite(ledger), database_url, project_root)
