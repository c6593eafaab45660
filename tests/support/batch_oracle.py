"""What should become of every line of a batch, per the in-process reference (`ingest_files`
then `run_serial`), and what the system of record says did, in the same shape.

Shared by the bad-input and fuzz tests: both compare, line by line, the outcome, reason,
detail, duplicate kind and raw bytes that PostgreSQL holds with those the reference computes.
Both sides come from `ledger_engine.audit.rederivation.expected` and `stored_log`, as the
oracle's and the replay's do.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine

from ledger_engine.audit.rederivation.expected import (
    LineRecord,
    event_ends,
    expected_records,
    file_line,
)
from ledger_engine.audit.rederivation.stored_log import StoredLog, consistent_read
from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.core.ingest import ingest_files
from ledger_engine.core.records import Event, RunResult
from ledger_engine.runtime.serial import run_serial
from tests.support.database import rows

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


def line_outcome(record: LineRecord) -> LineOutcome:
    return LineOutcome(
        record.source_file,
        record.line_number,
        record.outcome,
        record.reason,
        record.detail,
        record.raw,
        record.kind,
    )


@dataclass
class Expected:
    lines: list[LineOutcome]
    result: RunResult  # of every event so far, earlier batches included


def expected_batch(
    ledger: StreamingLedger, files: Files, earlier: Iterable[Event] = ()
) -> Expected:
    """The reference outcome of a batch of `files`, after the events of earlier batches."""
    before = list(earlier)
    lines = [file_line(0, line) for line in ingest_files(files)]
    result = run_serial(ledger, before + [line.event for line in lines if line.event is not None])
    ends = list(event_ends(result))[len(before) :]
    records = expected_records(lines, ends).lines
    return Expected([line_outcome(r) for r in records], result)


def stored_batch(engine: Engine, batch_id: int) -> list[LineOutcome]:
    """Every line of a committed batch as the system of record holds it, in batch order."""
    with consistent_read(engine) as conn:
        log = StoredLog(conn, batch_id)
        try:
            return [line_outcome(r) for r in log.lines_through(None)]
        finally:
            log.close()


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
