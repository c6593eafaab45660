"""The batch audit's Merkle check: the engine's trees moved exactly as the scope's change log
says, at a cost of the scope's changes and 4,096 digests per table, never the tables.

Each commit updates every table's bucket digests from its net row changes and records the
roots in its batch row (`ledger_engine.store.merkle` says how a tree is built). For a scope of
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
prove the rows written in scope (`ledger_engine.audit.expectations`, the batch suite).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, text

from ledger_engine.audit.findings import AuditScope, CheckResult
from ledger_engine.audit.proof.merkle_tree import DIGEST_MODULUS, ROOT_OF_NOTHING, tree_root
from ledger_engine.audit.proof.snapshots import (
    SUITE,
    digest_of_word_sums,
    log_key_json,
    recorded_tree,
)
from ledger_engine.audit.sql_files import audit_query, composable
from ledger_engine.core.declarations import StreamingLedger, Table

_ROOTS = text(audit_query("merkle_scope_batch_roots"))
# Per bucket, the word sums of the leaves of each key written in scope, as its last `after` and
# as its first `before`, from one read of the scope's entries of the table (the file says how):
# composed by psycopg2 with the key's expression for the table's key type; the range and the
# table name are bound.
_NET_SUMS = composable("merkle_scope_net_sums")


def check_name(table: Table) -> str:
    return f"merkle digests of {table.name} follow the change log"


def scope_tree_checks(
    conn: Connection, ledger: StreamingLedger, scope: AuditScope
) -> list[CheckResult]:
    """One check per table, in the consistent read `conn` is in (the one `scope` was read in)."""
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
            expected = (
                before.get(table.name, ROOT_OF_NOTHING)
                if scope.first_batch > 0
                else ROOT_OF_NOTHING
            )
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
    after, before = _net_digests(conn, table, scope)
    rewound = {
        bucket: (stored.get(bucket, 0) - after.get(bucket, 0) + before.get(bucket, 0))
        % DIGEST_MODULUS
        for bucket in stored.keys() | after.keys() | before.keys()
    }
    if tree_root(rewound) == expected:
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


def _net_digests(
    conn: Connection, table: Table, scope: AuditScope
) -> tuple[dict[int, int], dict[int, int]]:
    """The bucket digests (bucket -> digest; zero digests left out) of the keys written in
    scope as their last `after` and as their first `before`, from one read of the scope."""
    query = _NET_SUMS.format(key_json=log_key_json(table))
    cursor = conn.connection.cursor()
    cursor.execute(query, (scope.first_batch, scope.last_batch, table.name))
    after: dict[int, int] = {}
    before: dict[int, int] = {}
    for bucket, *sums in cursor.fetchall():
        for digests, word_sums in ((after, sums[:8]), (before, sums[8:])):
            digest = digest_of_word_sums(word_sums)
            if digest:
                digests[bucket] = digest
    return after, before
