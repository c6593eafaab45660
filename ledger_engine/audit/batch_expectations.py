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
PostgreSQL knows before it scans, so it scans only the primary key's range. Lookups outside
the scope (a key's earlier change, a request id's other events, a state row) are LATERAL
subqueries with LIMIT or OFFSET 0, so that the planner cannot turn them into a join over a
whole table. `ledger_engine.audit.batch_verify` runs two of these rules directly, with the
scope bound as parameters (`bound_to_scope`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ledger_engine.audit.expectations import (
    _ONE_PER_EVENT,
    DEFAULT_PROJECT_ROOT,
    STATE_TABLES,
    TRANSFER_STREAMS,
    StateTable,
    SuiteSpec,
    rows_expectation,
    run_suite,
)
from ledger_engine.audit.findings import CheckResult
from ledger_engine.store.commit import GENESIS_HASH

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
_SCOPE = """WITH RECURSIVE scope AS MATERIALIZED (
    SELECT s.first_batch, s.last_batch FROM {batch} AS s
)"""
_FIRST = "(SELECT scope.first_batch FROM scope)"
_LAST = "(SELECT scope.last_batch FROM scope)"
_IN_SCOPE = f"BETWEEN {_FIRST} AND {_LAST}"
# The scope's change-log entries, read once along the primary key (batch_id, position, seq). It
# is filtered by batch alone, on purpose: given a table name too, PostgreSQL may pick the index
# (table_name, key, batch_id, position) instead, which has the batch in third place and so
# means reading every entry of the table (measured: the whole table's entries on a ledger of
# 680,000 changes, for 16,000 in scope).
_SCOPE_CHANGES = f"""scope_changes AS MATERIALIZED (
    SELECT c.batch_id, c.position, c.seq, c.request_id, c.table_name, c.key, c.before, c.after
    FROM ledger_change_log AS c
    WHERE c.batch_id {_IN_SCOPE}
)"""
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


def _written_keys(table: StateTable) -> str:
    return f"""{_SCOPE_CHANGES},
written AS (
    SELECT DISTINCT c.key FROM scope_changes AS c WHERE c.table_name = '{table.name}'
)"""


def fold_in_scope_query(table: StateTable) -> str:
    """Keys written in scope whose row in `table` is not the `after` of their last change
    (the last overall: a batch committed after the scope is read in the same snapshot)."""
    return f"""{_SCOPE},
{_written_keys(table)},
last_change AS (
    SELECT w.key, l.after, l.batch_id, l.position
    FROM written AS w
    CROSS JOIN LATERAL (
        SELECT c.after, c.batch_id, c.position
        FROM ledger_change_log AS c
        WHERE c.table_name = '{table.name}' AND c.key = w.key
        ORDER BY c.batch_id DESC, c.position DESC, c.seq DESC
        LIMIT 1
    ) AS l
)
SELECT lc.key,
       s.value AS state_value,
       lc.after AS change_log_value,
       lc.batch_id AS last_change_batch,
       lc.position AS last_change_position,
       CASE WHEN s.key IS NULL THEN 'row missing'
            WHEN lc.after IS NULL THEN 'row deleted by the change log still exists'
            ELSE 'value differs from the change log'
       END AS problem
FROM last_change AS lc
LEFT JOIN LATERAL (
    SELECT t.key, t.value FROM {table.name} AS t WHERE t.key = lc.key LIMIT 1
) AS s ON true
WHERE (s.key IS NULL AND lc.after IS NOT NULL)
   OR (s.key IS NOT NULL AND to_jsonb(s.value) IS DISTINCT FROM lc.after)
ORDER BY lc.key
""".strip()


def chain_in_scope_query(table: StateTable) -> str:
    """Changes of `table` in scope whose `before` is not the `after` of the key's change
    before them: within the scope by a window over its changes, and for a key's first change
    in scope by one index probe for its change before the scope (none: it must start from
    nothing)."""
    return f"""{_SCOPE},
{_SCOPE_CHANGES},
in_scope AS (
    SELECT c.key, c.batch_id, c.position, c.seq, c.before,
           lag(c.after) OVER w AS previous_after,
           row_number() OVER w AS nth
    FROM scope_changes AS c
    WHERE c.table_name = '{table.name}'
    WINDOW w AS (PARTITION BY c.key ORDER BY c.batch_id, c.position, c.seq)
),
chained AS (
    SELECT i.key, i.batch_id, i.position, i.seq, i.before,
           CASE WHEN i.nth = 1 THEN earlier.after ELSE i.previous_after END AS previous_after,
           i.nth = 1 AND earlier.key IS NULL AS first_ever
    FROM in_scope AS i
    LEFT JOIN LATERAL (
        SELECT c.key, c.after
        FROM ledger_change_log AS c
        WHERE i.nth = 1 AND c.table_name = '{table.name}' AND c.key = i.key
          AND c.batch_id < {_FIRST}
        ORDER BY c.batch_id DESC, c.position DESC, c.seq DESC
        LIMIT 1
    ) AS earlier ON true
)
SELECT key, batch_id, position, seq, before, previous_after,
       CASE WHEN first_ever THEN 'first change does not start from nothing'
            ELSE 'before differs from the after of the change before' END AS problem
FROM chained
WHERE before IS DISTINCT FROM previous_after
ORDER BY key, batch_id, position, seq
""".strip()


def conservation_in_scope_query(table: StateTable) -> str:
    """Batches in scope whose net change of `table` in the change log (after minus before, a
    missing row counting as 0) differs from their applied deposits into it: money is
    conserved batch by batch, so the ledger's total follows its deposits."""
    net = "COALESCE(CAST(c.after AS numeric), 0) - COALESCE(CAST(c.before AS numeric), 0)"
    field = table.deposit_field
    return f"""{_SCOPE},
{_SCOPE_CHANGES},
changes AS (
    SELECT c.batch_id, SUM({net}) AS total
    FROM scope_changes AS c
    WHERE c.table_name = '{table.name}'
    GROUP BY c.batch_id
),
deposits AS (
    SELECT e.batch_id, SUM(CAST(e.payload ->> '{field}' AS numeric)) AS total
    FROM ledger_events AS e
    WHERE e.batch_id {_IN_SCOPE} AND e.stream = 'deposits' AND e.outcome = 'applied'
    GROUP BY e.batch_id
)
SELECT COALESCE(changes.batch_id, deposits.batch_id) AS batch_id,
       COALESCE(changes.total, 0) AS net_change_{table.name},
       COALESCE(deposits.total, 0) AS applied_deposits_{field},
       COALESCE(changes.total, 0) - COALESCE(deposits.total, 0) AS difference
FROM changes
FULL OUTER JOIN deposits ON deposits.batch_id = changes.batch_id
WHERE COALESCE(changes.total, 0) <> COALESCE(deposits.total, 0)
ORDER BY 1
""".strip()


def transfers_in_scope_query(table: StateTable) -> str:
    """Applied transfers in scope whose change-log entries in `table` do not sum to zero."""
    net = "SUM(COALESCE(CAST(c.after AS numeric), 0) - COALESCE(CAST(c.before AS numeric), 0))"
    streams = ", ".join(f"'{s}'" for s in TRANSFER_STREAMS)
    return f"""{_SCOPE},
{_SCOPE_CHANGES}
SELECT e.request_id, e.batch_id, e.position, e.stream,
       COUNT(*) AS changes,
       {net} AS net_change
FROM ledger_events AS e
JOIN scope_changes AS c ON c.batch_id = e.batch_id AND c.position = e.position
WHERE e.batch_id {_IN_SCOPE}
  AND e.outcome = 'applied' AND e.stream IN ({streams}) AND c.table_name = '{table.name}'
GROUP BY e.batch_id, e.position, e.request_id, e.stream
HAVING {net} <> 0
ORDER BY e.batch_id, e.position
""".strip()


def minimum_in_scope_query(table: StateTable) -> str:
    """Keys written in scope whose value in `table` is below the lowest the app allows."""
    return f"""{_SCOPE},
{_written_keys(table)}
SELECT '{table.name}' AS table_name, s.key, s.value
FROM written AS w
CROSS JOIN LATERAL (
    SELECT t.key, t.value FROM {table.name} AS t WHERE t.key = w.key LIMIT 1
) AS s
WHERE s.value < {table.minimum}
ORDER BY s.key
""".strip()


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
    # One primary-key probe of ledger_requests per executed event of the scope.
    return """SELECT e.batch_id, e.position,
           CASE WHEN q.request_id IS NULL
                    THEN 'executed event without its executed request id'
                WHEN q.batch_id <> e.batch_id OR q.position <> e.position
                    THEN 'its executed request id points to batch ' || q.batch_id
                         || ', position ' || q.position
                ELSE 'executed request id says ' || q.outcome || ', the event was ' || e.outcome
           END AS problem
    FROM events AS e
    LEFT JOIN LATERAL (
        SELECT r.request_id, r.batch_id, r.position, r.outcome
        FROM ledger_requests AS r WHERE r.request_id = e.request_id LIMIT 1
    ) AS q ON true
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
    return """SELECT batch_id, previous + 1 AS position,
           CASE WHEN position = previous + 2 THEN 'no event at this position'
                ELSE 'no events at positions ' || (previous + 1) || ' to ' || (position - 1)
           END AS problem
    FROM (
        SELECT e.batch_id, e.position,
               COALESCE(lag(e.position) OVER (PARTITION BY e.batch_id ORDER BY e.position), -1)
                   AS previous
        FROM events AS e
    ) AS positions
    WHERE position <> previous + 1"""


def unique_in_scope_query() -> str:
    """Request ids executed in scope that more than one executed event holds (anywhere in the
    ledger: one index probe per request id of the scope)."""
    return f"""{_SCOPE},
requested AS (
    SELECT DISTINCT e.request_id
    FROM ledger_events AS e
    WHERE e.batch_id {_IN_SCOPE} AND e.outcome <> 'duplicate' AND e.request_id IS NOT NULL
)
SELECT r.request_id,
       COUNT(*) AS executed_events,
       string_agg(o.outcome || ' in batch ' || o.batch_id || ' at position ' || o.position, '; '
                  ORDER BY o.batch_id, o.position) AS events
FROM requested AS r
CROSS JOIN LATERAL (
    SELECT x.batch_id, x.position, x.outcome
    FROM ledger_events AS x
    WHERE x.request_id = r.request_id AND x.outcome <> 'duplicate'
    OFFSET 0
) AS o
GROUP BY r.request_id
HAVING COUNT(*) > 1
ORDER BY r.request_id
""".strip()


def contiguity_in_scope_query() -> str:
    """Batch ids missing from the batch before the scope to its last batch, and batches from
    the scope's first on that log tables hold rows of but that have no batch row (each log
    table's batch ids by a loose index scan of its primary key, from the scope's first)."""
    distinct_ids = ",\n".join(
        f"""{table}_batches (batch_id) AS (
    SELECT MIN(t.batch_id) FROM {table} AS t WHERE t.batch_id >= {_FIRST}
    UNION ALL
    SELECT (SELECT MIN(t.batch_id) FROM {table} AS t WHERE t.batch_id > previous.batch_id)
    FROM {table}_batches AS previous
    WHERE previous.batch_id IS NOT NULL
)"""
        for table in BATCH_LOG_TABLES
    )
    logged = "\n    UNION ALL\n    ".join(
        f"SELECT '{table}' AS table_name, batch_id FROM {table}_batches"
        for table in BATCH_LOG_TABLES
    )
    start = f"GREATEST({_FIRST} - 1, 0)"  # the batch before the scope, proven earlier
    return f"""{_SCOPE},
{distinct_ids},
logged AS (
    {logged}
),
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
WHERE logged.batch_id IS NOT NULL AND b.batch_id IS NULL
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


def build_batch_expectations() -> list[Expectation]:
    """The batch suite's expectations in report order, each with its short name in `meta`."""
    rows = rows_expectation
    scope = "the batches after the last passing audit (the view ledger_audit_scope)"
    expectations = [
        rows(
            f"{t.name} keys written in scope hold their last change",
            fold_in_scope_query(t),
            f"Each key of `{t.name}` written in {scope} holds the `after` of its last "
            "change-log entry, or has no row if that is NULL.",
        )
        for t in STATE_TABLES
    ]
    expectations += [
        rows(
            f"{t.name} change log in scope continues its chain",
            chain_in_scope_query(t),
            f"Each change-log entry of `{t.name}` in {scope} starts from the `after` of the "
            "key's entry before it, found before the scope if need be; a key's first entry "
            "ever starts from nothing.",
        )
        for t in STATE_TABLES
    ]
    expectations += [
        rows(
            f"{t.name} changes in scope equal the applied deposits in scope",
            conservation_in_scope_query(t),
            f"Money is conserved batch by batch: in each batch of {scope}, the net change of "
            f"`{t.name}` in the change log equals the `{t.deposit_field}` of its applied "
            "deposits.",
        )
        for t in STATE_TABLES
    ]
    expectations += [
        rows(
            f"applied transfers in scope move nothing in {t.name}",
            transfers_in_scope_query(t),
            f"Every applied transfer of {scope} has change-log entries in `{t.name}` that sum "
            "to zero (after minus before, a missing row counting as 0).",
        )
        for t in STATE_TABLES
    ]
    expectations += [
        rows(
            f"no {t.label} written in scope below {t.minimum}",
            minimum_in_scope_query(t),
            f"No key of `{t.name}` written in {scope} holds less than {t.minimum}, the lowest "
            "the bank app allows.",
        )
        for t in STATE_TABLES
    ]
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


def batch_integrity_suite() -> SuiteSpec:
    """The batch audit's suite on the `audit_scope` asset of the same data source."""
    return SuiteSpec(
        SUITE_NAME,
        ASSET_NAME,
        ASSET_QUERY,
        BATCH_DEFINITION_NAME,
        VALIDATION_DEFINITION_NAME,
        CHECKPOINT_NAME,
        RESULT_FORMAT,
        build_batch_expectations,
    )


def run_batch_expectations(
    database_url: str, project_root: Path = DEFAULT_PROJECT_ROOT
) -> list[CheckResult]:
    """Run the `ledger_batch_integrity` checkpoint against `database_url` and build Data Docs
    (see `expectations.run_suite`)."""
    return run_suite(batch_integrity_suite(), database_url, project_root)
