"""The breaks as a person works them: the queue of open breaks, filtered and oldest first, and
one break with its statement entry, its ledger movement and the write-off posted for it.

Reads only (the work itself is `break_resolutions`'), each costing what it shows: a page of
the queue reads the open breaks (an index of its own, `ledger_recon_breaks_open`), a break
its row and its two items by their keys, never the ledger's history.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from psycopg2.extras import NamedTupleCursor
from sqlalchemy import Engine

from ledger_engine.reconcile.storage.sql_files import statement

QUEUE_PAGE = 200  # open breaks shown at once; the filters narrow a longer queue
CANDIDATES = 50  # open breaks of the same account offered to match with one


@dataclass(frozen=True)
class QueueFilter:
    """Which open breaks to show; None passes every break. `account` is a prefix of the
    account; `min_age_days` keeps breaks open at least that many days."""

    source: str | None = None
    reason: str | None = None
    account: str | None = None
    min_age_days: int | None = None


@dataclass(frozen=True)
class QueuedBreak:
    """An open break as the queue lists it. `write_off_outcome` is what became of the last
    write-off posted for it: "applied", "rejected", or None (none posted, or its adjusting
    event not committed yet: see `write_off_request_id`)."""

    break_id: int
    source: str
    reason: str
    account: str
    statement_amount: int | None
    ledger_amount: int | None
    statement_reference: str | None
    request_id: str | None
    opened_at: datetime
    write_off_request_id: str | None
    write_off_outcome: str | None


@dataclass(frozen=True)
class Queue:
    """A page of the open breaks passing a filter, and how many pass it in all."""

    breaks: tuple[QueuedBreak, ...]
    passing: int


@dataclass(frozen=True)
class BreakItems:
    """One break, open or resolved, with its items. The statement side (`file_id` on) is
    None for a break about a ledger movement alone; the ledger side (`batch_id` on) for one
    about a statement entry alone."""

    break_id: int
    source: str
    reason: str
    account: str
    status: str
    resolution: str | None
    opened_at: datetime
    resolved_at: datetime | None
    opened_run_id: int
    file_id: int | None
    position: int | None
    file_name: str | None
    statement_amount: int | None
    booking_date: date | None
    value_date: date | None
    statement_reference: str | None
    servicer_reference: str | None
    statement_description: str | None
    batch_id: int | None
    change_position: int | None
    change_seq: int | None
    request_id: str | None
    table_name: str | None
    row_key: str | None
    stream: str | None
    committed_at: datetime | None
    ledger_amount: int | None
    write_off_request_id: str | None
    write_off_outcome: str | None


def open_queue(engine: Engine, wanted: QueueFilter, limit: int = QUEUE_PAGE) -> Queue:
    """The first `limit` open breaks passing `wanted`, oldest first."""
    assert limit > 0, limit
    params = {
        "source": wanted.source,
        "reason": wanted.reason,
        "account": wanted.account,
        "min_age_days": wanted.min_age_days,
        "limit": limit,
    }
    rows = _rows(engine, "queue/open_breaks", params)
    breaks = tuple(QueuedBreak(*row[:-1]) for row in rows)
    return Queue(breaks, rows[0].passing if rows else 0)


def open_counts(engine: Engine) -> dict[tuple[str, str], int]:
    """How many breaks are open, by (source, reason)."""
    rows = _rows(engine, "queue/open_facets", {})
    return {(row.source, row.reason): row.open_breaks for row in rows}


def break_items(engine: Engine, break_id: int) -> BreakItems | None:
    """The break `break_id` with its items, or None if there is no such break."""
    rows = _rows(engine, "queue/break", {"break_id": break_id})
    assert len(rows) <= 1, rows  # by the primary key
    return BreakItems(*rows[0]) if rows else None


@dataclass(frozen=True)
class Movement:
    """A ledger movement: one change of a row by an applied event, and where it was committed."""

    batch_id: int
    change_position: int
    change_seq: int
    request_id: str
    table_name: str
    row_key: str
    stream: str | None
    committed_at: datetime | None
    ledger_amount: int


def settling_movements(engine: Engine, break_id: int) -> tuple[Movement, ...]:
    """The movements the match that resolved the break holds besides its own (a settled
    write-off's adjustment, a partner matched with it); none for an open break."""
    rows = _rows(engine, "queue/settling_movements", {"break_id": break_id})
    return tuple(Movement(*row) for row in rows)


def match_candidates(engine: Engine, item: BreakItems) -> tuple[QueuedBreak, ...]:
    """The other open breaks of `item`'s source and account, oldest first: those it may be
    matched with by hand (the match itself checks the rest)."""
    params = {
        "source": item.source,
        "account": item.account,
        "break_id": item.break_id,
        "limit": CANDIDATES,
    }
    rows = _rows(engine, "queue/match_candidates", params)
    return tuple(QueuedBreak(*row) for row in rows)


def _rows(engine: Engine, name: str, params: dict) -> list:
    with engine.connect() as conn:
        cursor = conn.connection.cursor(cursor_factory=NamedTupleCursor)
        cursor.execute(statement(name), params)
        return cursor.fetchall()
