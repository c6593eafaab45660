"""The batch audit's Merkle check: the engine's trees moved exactly as the scope's change log
says, at a cost of the scope's changes and 4,096 digests per table, never the tables.

Each commit updates every table's bucket digests from its net row changes and records the
roots in its batch row (`ledger_engine.audit.merkle` says how a tree is built). For a scope of
batches, per table:

1. the stored bucket digests hash to the root recorded in the newest batch row
   (`snapshots.recorded_tree`, the same check as the full verify's), whose hash the chain
   proves;
2. the stored digests with the scope's net changes taken out (for each key written in scope:
   the leaf of its last `after` subtracted, the leaf of its first `before` added; leaves and
   sums computed inside PostgreSQL by the functions of `sql/0009_merkle_functions.sql`) hash
   to the root recorded in the batch before the scope (before batch 0: the empty tree's).

So the tree of the batch before the scope, which an earlier audit proved, plus what the change
log of the scope records, is the tree of the newest batch: no change went into the tree that
the change log does not hold, and no change of the log is missing from the tree. That a table's
rows *are* its tree is what the full audit's recomputation proves; the batch audit's rules
prove the rows written in scope (`ledger_engine.audit.batch_expectations`).
"""

from __future__ import annotations

from typing import Any

from psycopg2 import sql
from sqlalchemy import Connection, text

from ledger_engine.api import StreamingLedger, Table
from ledger_engine.audit.findings import AuditScope, CheckResult
from ledger_engine.audit.merkle import EMPTY_ROOT, MODULUS, root_of
from ledger_engine.audit.snapshots import SUITE, bucket_digests, log_key_json, recorded_tree

_ROOTS = text("SELECT merkle_roots FROM ledger_batches WHERE batch_id = :batch_id")

# Each key written in scope with its first `before` and its last `after` in the scope; `side`
# is one of those two fixed column names. The range and the table name are bound. The scope's
# entries are read along the primary key, by batch alone (`OFFSET 0` keeps the table name out
# of that scan: see batch_expectations._SCOPE_CHANGES for why).
_NET_CHANGES = sql.SQL(
    """SELECT {key_json}, ledger_canonical_json({side})
FROM (
    SELECT c.key,
           (array_agg(c.before ORDER BY c.batch_id, c.position, c.seq))[1] AS before,
           (array_agg(c.after ORDER BY c.batch_id DESC, c.position DESC, c.seq DESC))[1]
               AS after
    FROM (
        SELECT s.batch_id, s.position, s.seq, s.table_name, s.key, s.before, s.after
        FROM ledger_change_log AS s
        WHERE s.batch_id BETWEEN %s AND %s
        OFFSET 0
    ) AS c
    WHERE c.table_name = %s
    GROUP BY c.key
) AS net
WHERE {side} IS NOT NULL"""
)


def check_name(table: Table) -> str:
    return f"merkle digests of {table.name} follow the change log"


def scope_tree_checks(
    conn: Connection, ledger: StreamingLedger, scope: AuditScope
) -> list[CheckResult]:
    """One check per table, in the snapshot `conn` reads (the one `scope` was read in)."""
    tables = [table for _, table in sorted(ledger.tables.items())]
    if scope.last_batch < 0:  # nothing committed, nothing recorded to follow
        return [CheckResult(SUITE, check_name(t), True) for t in tables]
    newest = _roots(conn, scope.last_batch)
    before = _roots(conn, scope.first_batch - 1) if scope.first_batch > 0 else {}
    checks = []
    for table in tables:
        stored, _, findings = recorded_tree(
            conn, table.name, scope.last_batch, newest.get(table.name)
        )
        if not scope.empty and not findings:
            expected = before.get(table.name, EMPTY_ROOT) if scope.first_batch > 0 else EMPTY_ROOT
            findings += _movement_findings(conn, table, scope, stored, expected)
        checks.append(CheckResult(SUITE, check_name(table), not findings, tuple(findings)))
    return checks


def _roots(conn: Connection, batch_id: int) -> dict[str, Any]:
    return conn.execute(_ROOTS, {"batch_id": batch_id}).scalar() or {}


def _movement_findings(
    conn: Connection, table: Table, scope: AuditScope, stored: dict[int, int], expected: str
) -> list[str]:
    """A finding if the stored digests less the scope's net changes do not hash to `expected`,
    the root of the batch before the scope."""
    params = (scope.first_batch, scope.last_batch, table.name)
    after = bucket_digests(conn, _net_rows(table, "after"), params=params)
    before = bucket_digests(conn, _net_rows(table, "before"), params=params)
    rewound = {
        bucket: (stored.get(bucket, 0) - after.get(bucket, 0) + before.get(bucket, 0)) % MODULUS
        for bucket in stored.keys() | after.keys() | before.keys()
    }
    if root_of(rewound) == expected:
        return []
    where = (
        f"the root recorded in batch {scope.first_batch - 1}"
        if scope.first_batch > 0
        else "the empty tree's root (there is no batch before the scope)"
    )
    return [
        f"table {table.name}: the stored bucket digests less the net changes the change log "
        f"records for batches {scope.first_batch} to {scope.last_batch} do not hash to {where}:"
        " the change log of those batches does not account for the tree's change"
    ]


def _net_rows(table: Table, side: str) -> sql.Composable:
    return _NET_CHANGES.format(key_json=log_key_json(table), side=sql.SQL(side))
