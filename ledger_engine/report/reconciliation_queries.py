"""What a reconciliation page shows, read from the system of record in one consistent read.

The SQL is the audit's own (`ledger_engine/audit/sql/report_reconciliation_*.sql`), written
apart from the store that records the runs; every value is bound at execution. The
dataclasses are what the reads fill and what `reconciliation_context` reads.

Two kinds of figure: those of the runs themselves (what each considered, matched, opened and
closed: fixed once the run committed), and those of its sources as the page is written (their
open breaks and their ages, their statement drift). Written right after the runs, as `ledger
reconcile` and the DAG write it, the second are the runs' outcome: every item a run considers
ends in one of its matches or in one open break of its source.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from sqlalchemy import Connection, Engine, text

from ledger_engine.audit.sql_files import audit_query
from ledger_engine.errors import LedgerError

OLDEST_BREAKS = 20  # the open breaks listed one per row, oldest first
DRIFT_ROWS = 100  # at most this many accounts in the drift table (drifting ones first)
AGE_EDGES = (1, 7, 30)  # days: the open breaks' age buckets are <1, 1–7, 7–30 and >=30 days


@dataclass(frozen=True)
class StatementFile:
    """A statement file a run considered anew."""

    file_id: int
    file_name: str
    statement_id: str | None
    entries: int
    rejected: int


@dataclass(frozen=True)
class RunRow:
    """One run of one source: what it considered and what it decided."""

    run_id: int
    source: str
    who: str
    started_at: datetime
    finished_at: datetime
    after_batch: int  # the source's previous run considered the batches through this one
    through_batch: int
    after_file: int
    through_file: int
    statement_items: int
    ledger_items: int
    matches: int
    breaks_opened: int
    breaks_closed: int  # those written off included
    statement_matched: int  # statement entries its matches took
    ledger_matched: int  # ledger changes its matches took
    written_off: int  # of the breaks it closed, the write-offs it settled
    files: tuple[StatementFile, ...]  # the statement files it considered anew


@dataclass(frozen=True)
class OpenBreak:
    """An open break, as the readers' view `open_breaks` tells it."""

    break_id: int
    source: str
    reason: str
    account: str
    statement_amount: int | None
    ledger_amount: int | None
    amount_difference: int | None
    booking_date: date | None
    statement_reference: str | None
    statement_description: str | None
    request_id: str | None
    opened_at: datetime
    age: timedelta
    write_off_request_id: str | None  # the adjusting event of a write-off posted for it


@dataclass(frozen=True)
class DriftRow:
    """An account's last stated balance beside the ledger's balance as of that moment."""

    source: str
    table_name: str
    account: str
    statement_balance: int
    stated: str  # the statement's date of it, as the bank gave it (a day, or a date-time)
    as_of: datetime  # the moment it holds at: a day's balance at the day's end (exclusive)
    ledger_balance_then: int
    drift: int  # statement - ledger
    ledger_balance_now: int


@dataclass(frozen=True)
class ReconciliationView:
    """What a reconciliation page shows, read in one consistent read at `read_at`."""

    read_at: datetime
    runs: list[RunRow]  # by source, then run id
    open_by_reason_and_age: dict[tuple[str, int], int]  # (reason, age bucket) -> open breaks
    opened_by_reason: dict[str, int]  # breaks the runs opened, by reason
    oldest: list[OpenBreak]  # the oldest open breaks, oldest first
    drift: list[DriftRow]  # drifting accounts first, the largest drift first
    drift_accounts: int  # every account with a stated balance (the table may list fewer)
    drifting_accounts: int  # those whose drift is not 0

    @property
    def sources(self) -> list[str]:
        """The sources the runs reconciled, by name."""
        return sorted({run.source for run in self.runs})


class UnknownRuns(LedgerError, ValueError):
    """Run ids that no reconciliation recorded (the message names them)."""


def read_reconciliation(
    engine: Engine,
    run_ids: Sequence[int],
    *,
    oldest: int = OLDEST_BREAKS,
    drift_rows: int = DRIFT_ROWS,
    age_edges: Sequence[int] = AGE_EDGES,
) -> ReconciliationView:
    """Read what the page of the runs `run_ids` shows, in one consistent read (REPEATABLE
    READ): a run committing meanwhile shows in none of the figures, or in all of them. Raises
    `UnknownRuns` for an id no run has."""
    ids = sorted(set(run_ids))
    with engine.connect() as conn:
        conn = conn.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin():
            read_at = conn.execute(text("SELECT now()")).scalar_one()
            runs = _runs(conn, ids)
            missing = sorted(set(ids) - {run.run_id for run in runs})
            if missing:
                raise UnknownRuns(f"no reconciliation run has the id(s) {missing}")
            sources = sorted({run.source for run in runs})
            drift, accounts, drifting = _drift(conn, sources, drift_rows)
            return ReconciliationView(
                read_at=read_at,
                runs=runs,
                open_by_reason_and_age=_open(conn, sources, age_edges),
                opened_by_reason=_opened(conn, ids),
                oldest=_oldest(conn, sources, oldest),
                drift=drift,
                drift_accounts=accounts,
                drifting_accounts=drifting,
            )


def _query(name: str):
    return text(audit_query(f"report_reconciliation_{name}"))


def _runs(conn: Connection, ids: list[int]) -> list[RunRow]:
    files: dict[int, list[StatementFile]] = {}
    for row in conn.execute(_query("files"), {"run_ids": ids}):
        found = dict(row._mapping)
        files.setdefault(found.pop("run_id"), []).append(StatementFile(**found))
    return [
        RunRow(**row._mapping, files=tuple(files.get(row.run_id, ())))
        for row in conn.execute(_query("runs"), {"run_ids": ids})
    ]


def _open(conn: Connection, sources: list[str], edges: Sequence[int]) -> dict[tuple[str, int], int]:
    params = {"sources": sources, "edges": [float(edge) for edge in edges]}
    return {(row.reason, row.bucket): row.breaks for row in conn.execute(_query("open"), params)}


def _opened(conn: Connection, ids: list[int]) -> dict[str, int]:
    return {row.reason: row.breaks for row in conn.execute(_query("opened"), {"run_ids": ids})}


def _oldest(conn: Connection, sources: list[str], limit: int) -> list[OpenBreak]:
    params = {"sources": sources, "limit": max(limit, 0)}
    return [OpenBreak(**row._mapping) for row in conn.execute(_query("oldest"), params)]


def _drift(conn: Connection, sources: list[str], limit: int) -> tuple[list[DriftRow], int, int]:
    assert limit >= 1, "the drift table's rows carry the counts: it lists one at least"
    params = {"sources": sources, "limit": limit}
    rows = [dict(row._mapping) for row in conn.execute(_query("drift"), params)]
    if not rows:
        return [], 0, 0  # no account of these sources has a stated balance
    counts = rows[0]["accounts"], rows[0]["drifting"]
    for row in rows:
        del row["accounts"], row["drifting"]
    return [DriftRow(**row) for row in rows], *counts
