"""What should become of every line of a batch, per the in-process reference (`ingest_files`
then `run_serial`), and what the system of record says did, in the same shape.

Shared by the bad-input and fuzz tests: both compare, line by line, the outcome, reason,
detail, duplicate kind and raw bytes that PostgreSQL holds with those the reference computes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, text

from ledger_engine.api import StreamingLedger
from ledger_engine.ingest import ingest_files
from ledger_engine.model import (
    APPLIED,
    DUPLICATE,
    INVALID_EVENT,
    REJECTED,
    Duplicate,
    Event,
    Rejection,
    RunResult,
)
from ledger_engine.serial import run_serial

Files = Sequence[tuple[str, bytes]]


@dataclass(frozen=True)
class LineOutcome:
    """What became of one line: `raw`, `reason` and `detail` for a rejection, `kind` for a
    duplicate (None otherwise)."""

    source_file: str
    line_number: int
    outcome: str
    reason: str | None = None
    detail: str | None = None
    raw: bytes | None = None
    kind: str | None = None


@dataclass
class Expected:
    lines: list[LineOutcome]
    result: RunResult  # of every event so far, earlier batches included


def expected_batch(
    ledger: StreamingLedger, files: Files, earlier: Iterable[Event] = ()
) -> Expected:
    """The reference outcome of a batch of `files`, after the events of earlier batches."""
    before = list(earlier)
    lines = ingest_files(files)
    events = [line.event for line in lines if line.event is not None]
    result = run_serial(ledger, before + events)
    ended = iter(_ended(result))
    for _ in range(sum(1 for o in result.outcomes[: len(before)] if o.status != APPLIED)):
        next(ended)
    statuses = iter(o.status for o in result.outcomes[len(before) :])
    outcomes: list[LineOutcome] = []
    for line in lines:
        where = (line.source_file, line.line_number)
        if line.event is None:
            outcomes.append(
                LineOutcome(*where, REJECTED, INVALID_EVENT, line.problem, bytes(line.raw))
            )
            continue
        status = next(statuses)
        if status == APPLIED:
            outcomes.append(LineOutcome(*where, APPLIED))
        elif status == REJECTED:
            rejection = next(ended)
            assert isinstance(rejection, Rejection)
            outcomes.append(
                LineOutcome(*where, REJECTED, rejection.reason, rejection.detail, bytes(line.raw))
            )
        else:
            duplicate = next(ended)
            assert isinstance(duplicate, Duplicate) and status == DUPLICATE
            outcomes.append(LineOutcome(*where, DUPLICATE, kind=duplicate.kind))
    return Expected(outcomes, result)


def _ended(result: RunResult) -> list[Rejection | Duplicate]:
    """Rejections and duplicates in the order of the events they end."""
    rejections, duplicates = iter(result.rejections), iter(result.duplicates)
    return [
        next(rejections) if o.status == REJECTED else next(duplicates)
        for o in result.outcomes
        if o.status != APPLIED
    ]


def rows(engine: Engine, query: str, **params: Any) -> list[tuple]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(query), params)]


def stored_batch(engine: Engine, batch_id: int) -> list[LineOutcome]:
    """Every line of a committed batch as the system of record holds it, in batch order."""
    found = rows(
        engine,
        "SELECT e.source_file, e.line_number, e.outcome, r.reason, r.detail, r.raw_input, d.kind"
        " FROM ledger_events e"
        " LEFT JOIN ledger_rejections r USING (batch_id, position)"
        " LEFT JOIN ledger_duplicates d USING (batch_id, position)"
        " WHERE e.batch_id = :batch ORDER BY e.position",
        batch=batch_id,
    )
    return [
        LineOutcome(
            file, number, outcome, reason, detail, None if raw is None else bytes(raw), kind
        )
        for file, number, outcome, reason, detail, raw, kind in found
    ]


def stored_counts(engine: Engine, batch_id: int) -> tuple[int, int, int, int]:
    """(ingested, applied, rejected, duplicates) of a committed batch's row."""
    (counts,) = rows(
        engine,
        "SELECT events_ingested, applied, rejected, duplicates FROM ledger_batches"
        " WHERE batch_id = :batch",
        batch=batch_id,
    )
    return counts


def stored_bank_state(engine: Engine) -> dict[str, dict[str, int]]:
    """The bank ledger's two tables as stored."""
    return {
        "accounts": dict(rows(engine, "SELECT key, value FROM accounts")),
        "asset_ledger": dict(rows(engine, "SELECT key, value FROM asset_ledger")),
    }


def stored_results(engine: Engine) -> list[tuple[str, str, Any]]:
    return rows(
        engine,
        "SELECT stream, request_id, payload FROM ledger_results ORDER BY batch_id, position, seq",
    )
