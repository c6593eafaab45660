"""Looking up what became of a request id: the event that executed it, and every retry.

A request id is executed once, by its first event (applied, or rejected with a reason); every
later event carrying it, in the same batch, a later batch or a later run, is a duplicate of
that event (`exists` or `exists_with_different_payload`) and has no effect. `request_outcome`
reads all of it from the `request_outcomes` view (sql/0006) in one indexed query.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from psycopg2.extras import NamedTupleCursor
from sqlalchemy import Engine

from ledger_engine.core.records import APPLIED, DUPLICATE, REJECTED
from ledger_engine.errors import InconsistentRequest
from ledger_engine.store.sql_files import statement


@dataclass(frozen=True)
class DuplicateEvent:
    """A later event that carried an executed request id and was therefore not run."""

    batch_id: int
    position: int
    stream: str | None
    kind: str  # `exists` or `exists_with_different_payload`
    committed_at: datetime


@dataclass(frozen=True)
class RequestOutcome:
    """The outcome of a request id: its executed event and the duplicates that followed.

    `outcome` is `applied` (then `results` holds its result payloads in emission order) or
    `rejected` (then `rejection_reason` and `rejection_detail` say why).
    """

    request_id: str
    stream: str | None
    outcome: str
    batch_id: int
    position: int
    committed_at: datetime
    results: tuple[Any, ...]
    rejection_reason: str | None
    rejection_detail: str | None
    duplicates: tuple[DuplicateEvent, ...]


_LOOKUP = statement("requests/lookup")


def request_outcome(engine: Engine, request_id: str) -> RequestOutcome | None:
    """What became of `request_id`, or None if no committed event carried it."""
    with engine.connect() as conn:
        cursor = conn.connection.cursor(cursor_factory=NamedTupleCursor)
        cursor.execute(_LOOKUP, {"request_id": request_id})
        rows = cursor.fetchall()
    if not rows:
        return None
    executed = [row for row in rows if row.outcome != DUPLICATE]
    if len(executed) != 1:
        raise InconsistentRequest(
            f"request id {request_id!r} has {len(executed)} executed events, not one"
        )
    first = executed[0]
    assert first.outcome in (APPLIED, REJECTED), first.outcome
    duplicates = tuple(
        _duplicate(request_id, row, first) for row in rows if row.outcome == DUPLICATE
    )
    return RequestOutcome(
        request_id=request_id,
        stream=first.stream,
        outcome=first.outcome,
        batch_id=first.batch_id,
        position=first.position,
        committed_at=first.committed_at,
        results=tuple(first.results or ()),
        rejection_reason=first.rejection_reason,
        rejection_detail=first.rejection_detail,
        duplicates=duplicates,
    )


def _duplicate(request_id: str, row: Any, first: Any) -> DuplicateEvent:
    # Each duplicate names the executed event it repeats (from ledger_requests); it must be
    # the one found here.
    if (row.duplicate_of_batch_id, row.duplicate_of_position) != (first.batch_id, first.position):
        raise InconsistentRequest(
            f"request id {request_id!r}: the duplicate at batch {row.batch_id}, position "
            f"{row.position} repeats batch {row.duplicate_of_batch_id}, position "
            f"{row.duplicate_of_position}, but its executed event is at batch "
            f"{first.batch_id}, position {first.position}"
        )
    return DuplicateEvent(
        batch_id=row.batch_id,
        position=row.position,
        stream=row.stream,
        kind=row.duplicate_kind,
        committed_at=row.committed_at,
    )
