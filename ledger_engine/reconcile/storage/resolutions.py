"""Breaks worked by people: a manual match, and the posting of a write-off (its settling is a
run's: `reconciliation.record_run`). Each is one transaction under the source's
reconciliation lock, so that it never races a run of the source, and each change of a break
is a step of its history with who, when and a note.

What may be done to which break is checked here, against the breaks as locked:
- a manual match takes open breaks of one source and one account, with at least one item of
  each side, none of them waiting for a write-off's adjustment;
- a write-off takes one open break; its adjustment (`reconcile.write_offs.adjustment_amount`)
  is posted once: while the posted request is not committed, writing the break off again
  posts the same event again (the ledger sees a duplicate); once it is applied, the next run
  settles it; once it is rejected, a new attempt posts a new request.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime

from psycopg2.extras import NamedTupleCursor
from sqlalchemy import Engine

from ledger_engine.core.records import APPLIED, REJECTED
from ledger_engine.errors import ResolutionRefused
from ledger_engine.reconcile.break_states import (
    MANUAL_MATCH,
    OPEN,
    WRITE_OFF_POSTED,
    WRITTEN_OFF,
)
from ledger_engine.reconcile.storage.runs import (
    append_history,
    insert_match,
    resolve_break,
)
from ledger_engine.reconcile.storage.sql_files import statement
from ledger_engine.reconcile.write_offs import adjustment_amount, write_off_request_id
from ledger_engine.store.locks import RECONCILE_LOCK


@dataclass(frozen=True)
class WriteOffPosting:
    """What writing a break off did: the adjusting event's request id and amount (no request
    for a write-off of nothing, which resolved the break at once), and whether it is the same
    posting as before, landed again."""

    break_id: int
    source: str
    account: str
    amount: int
    request_id: str | None
    note: str
    again: bool


@dataclass(frozen=True)
class HistoryStep:
    """One change of a break's state."""

    seq: int
    action: str
    who: str
    note: str | None
    run_id: int | None
    match_id: int | None
    request_id: str | None
    at: datetime


def record_manual_match(engine: Engine, break_ids: Sequence[int], *, who: str, note: str) -> int:
    """Match the items of the open breaks `break_ids` by hand (see the module); the match id.
    Raises `ResolutionRefused` saying why when they may not be matched."""
    require_note(note)
    with engine.begin() as conn:
        cursor = conn.connection.cursor(cursor_factory=NamedTupleCursor)
        breaks = _lock(cursor, break_ids)
        _check_matchable(breaks)
        statement_items = [(b.file_id, b.position) for b in breaks if b.file_id is not None]
        ledger_items = [
            (b.batch_id, b.change_position, b.change_seq) for b in breaks if b.batch_id is not None
        ]
        difference = sum(b.statement_amount for b in breaks if b.file_id is not None) - sum(
            b.ledger_amount for b in breaks if b.batch_id is not None
        )
        match_id = insert_match(
            cursor,
            source=breaks[0].source,
            run_id=None,
            kind="manual",
            rule=None,
            account=breaks[0].account,
            differences=(difference, _days_apart(breaks)),
            who=who,
            note=note,
            items=(statement_items, ledger_items),
        )
        for item in breaks:
            resolve_break(cursor, item.break_id, MANUAL_MATCH)
            append_history(cursor, item.break_id, MANUAL_MATCH, who, None, match_id, note=note)
    return match_id


def record_write_off(
    engine: Engine, break_id: int, *, who: str, note: str, sources: Collection[str]
) -> WriteOffPosting:
    """Post the write-off of the open break `break_id` (see the module): its history records
    the adjusting event's request id, which the caller then lands in the event inbox. Only a
    break of one of `sources` (those that declare a write-off stream) may be written off.
    Raises `ResolutionRefused` saying why when the break may not be written off now."""
    require_note(note)
    with engine.begin() as conn:
        cursor = conn.connection.cursor(cursor_factory=NamedTupleCursor)
        (item,) = _lock(cursor, [break_id])
        if item.source not in sources:
            raise ResolutionRefused(
                f"source {item.source!r} declares no [write_off] stream; its breaks cannot be "
                "written off (declare one in the sources file)"
            )
        amount = adjustment_amount(item.reason, item.statement_amount, item.ledger_amount)
        posting = WriteOffPosting(break_id, item.source, item.account, amount, None, note, False)
        if item.posted_request_id is not None and item.posted_outcome != REJECTED:
            if item.posted_outcome == APPLIED:
                raise ResolutionRefused(
                    f"break {break_id} is written off by {item.posted_request_id}, applied; "
                    "the next reconciliation run settles it"
                )
            # Posted, not yet committed: the same event again (the pipeline keeps one).
            return replace(
                posting, request_id=item.posted_request_id, note=item.posted_note, again=True
            )
        if amount == 0:  # nothing to adjust: the write-off resolves the break now
            resolve_break(cursor, break_id, WRITTEN_OFF)
            append_history(cursor, break_id, WRITTEN_OFF, who, None, None, note=note)
            return posting
        request_id = write_off_request_id(break_id, item.posted_attempts + 1)
        append_history(
            cursor, break_id, WRITE_OFF_POSTED, who, None, None, note=note, request_id=request_id
        )
    return replace(posting, request_id=request_id)


def break_history(engine: Engine, break_id: int) -> list[HistoryStep]:
    """Every change of the break's state, oldest first (empty for an unknown break)."""
    with engine.connect() as conn:
        cursor = conn.connection.cursor()
        cursor.execute(statement("resolutions/break_history"), (break_id,))
        return [HistoryStep(*row) for row in cursor.fetchall()]


def _lock(cursor, break_ids: Sequence[int]) -> list:
    """The breaks, locked, after their source's reconciliation lock: all of them must exist,
    belong to one source and be open."""
    wanted = sorted(set(break_ids))
    if not wanted:
        raise ResolutionRefused("name at least one break")
    cursor.execute(statement("resolutions/break_source"), {"break_ids": wanted})
    sources = [row.source for row in cursor.fetchall()]
    if len(sources) > 1:
        raise ResolutionRefused(f"the breaks belong to several sources: {', '.join(sources)}")
    if sources:
        cursor.execute(statement("runs/lock"), (RECONCILE_LOCK, sources[0]))
    cursor.execute(statement("resolutions/lock_breaks"), {"break_ids": wanted})
    found = cursor.fetchall()
    missing = sorted(set(wanted) - {b.break_id for b in found})
    if missing:
        raise ResolutionRefused(f"no break {', '.join(map(str, missing))}")
    resolved = [b.break_id for b in found if b.status != OPEN]
    if resolved:
        raise ResolutionRefused(f"break {', '.join(map(str, resolved))} is not open")
    return found


def _check_matchable(breaks: list) -> None:
    accounts = sorted({b.account for b in breaks})
    if len(accounts) > 1:
        raise ResolutionRefused(f"the breaks are about several accounts: {', '.join(accounts)}")
    if not any(b.file_id is not None for b in breaks) or not any(
        b.batch_id is not None for b in breaks
    ):
        raise ResolutionRefused(
            "a match needs at least one statement entry and one ledger movement"
        )
    waiting = [
        b.break_id
        for b in breaks
        if b.posted_request_id is not None and b.posted_outcome != REJECTED
    ]
    if waiting:
        raise ResolutionRefused(
            f"break {', '.join(map(str, waiting))} is written off; its adjustment is posted"
        )


def _days_apart(breaks: list) -> int:
    """How far apart the latest statement date and the latest ledger date are."""
    statement_day: date = max(b.statement_date for b in breaks if b.file_id is not None)
    ledger_day: date = max(b.ledger_date for b in breaks if b.batch_id is not None)
    return abs((statement_day - ledger_day).days)


def require_note(note: str) -> None:
    """Refuse (`ResolutionRefused`) a blank note: a person's work on a break says why."""
    if not note or not note.strip():
        raise ResolutionRefused("say why, with a note")
