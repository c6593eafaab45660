"""What an audit covers, and the marks that passing audits leave (`sql/0011_audit_marks.sql`).

The batch audit covers the batches after the last mark (all batches if there is none) up to
the newest batch it sees when it starts; the full audit covers every batch. An audit whose
every check passed records a mark through the newest batch it covered, with that batch's hash
as the audit proved it; the next batch audit starts after it, and checks that the first batch
in its scope still chains to that hash. A failing audit records nothing.

Every number here is read or written with bound parameters.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, Engine, text

from ledger_engine.audit.findings import BATCHES, FULL, AuditScope
from ledger_engine.audit.sql_files import audit_query


@dataclass(frozen=True)
class Mark:
    """A passing audit's record: batches `first_batch`..`audited_through` proven, the last one
    with hash `batch_hash`."""

    mark_id: int
    kind: str
    first_batch: int
    audited_through: int
    batch_hash: str
    checks: int
    audited_at: datetime


_LAST_MARK = text(audit_query("scope_last_mark"))
_NEWEST_BATCH = text(audit_query("scope_newest_batch"))
_INSERT_MARK = text(audit_query("scope_insert_mark"))


def last_mark(conn: Connection) -> Mark | None:
    """The mark reaching furthest (the latest of those, if several do), or None."""
    row = conn.execute(_LAST_MARK).first()
    return None if row is None else Mark(**row._mapping)


def batch_scope(conn: Connection, mark: Mark | None = None) -> AuditScope:
    """The batch audit's scope now: the batches after `mark` (the last mark if not given) to
    the newest batch."""
    mark = last_mark(conn) if mark is None else mark
    first = 0 if mark is None else mark.audited_through + 1
    return _through_newest(conn, BATCHES, first)


def full_scope(conn: Connection) -> AuditScope:
    """The full audit's scope now: every batch."""
    return _through_newest(conn, FULL, 0)


def read_scope(engine: Engine, kind: str) -> AuditScope:
    """The scope of an audit of `kind` (`BATCHES` or `FULL`) starting now."""
    with engine.connect() as conn:
        return full_scope(conn) if kind == FULL else batch_scope(conn)


def _through_newest(conn: Connection, kind: str, first: int) -> AuditScope:
    newest = conn.execute(_NEWEST_BATCH).first()
    if newest is None:
        return AuditScope(kind, first, -1)
    return AuditScope(kind, first, newest.batch_id, newest.batch_hash)


def narrowest(scopes: Iterable[AuditScope]) -> AuditScope:
    """What several parts of one audit covered together: they start where the first starts
    and end where the earliest ends (a batch committed while the audit ran is covered only by
    the parts that started after it)."""
    found = list(scopes)
    if not found:
        raise ValueError("no scope given")
    shortest = min(found, key=lambda s: s.last_batch)
    first = min(s.first_batch for s in found)
    return AuditScope(shortest.kind, first, shortest.last_batch, shortest.last_batch_hash)


def record_mark(engine: Engine, scope: AuditScope, checks: int) -> Mark | None:
    """Record that an audit of `scope` passed all its `checks`; None (nothing recorded) when
    no batch had been committed."""
    if not _markable(scope):
        return None
    with engine.begin() as conn:
        return _insert_mark(conn, scope, checks)


def _markable(scope: AuditScope) -> bool:
    return scope.last_batch >= 0 and scope.last_batch_hash is not None


def _insert_mark(conn: Connection, scope: AuditScope, checks: int) -> Mark:
    values = {
        "kind": scope.kind,
        "first_batch": min(scope.first_batch, scope.last_batch + 1),
        "audited_through": scope.last_batch,
        "batch_hash": scope.last_batch_hash,
        "checks": checks,
    }
    return Mark(**conn.execute(_INSERT_MARK, values).one()._mapping)
