"""The serial runner as an oracle: what the system of record must hold for the files it took in.

`serial_differences` reads which files each committed batch took (`ledger_batches`), reads
those files again, runs their lines one at a time with the serial runner in batch order, and
compares, line by line and row by row, everything the pipeline stored: each line's outcome,
rejections (reason, detail, raw bytes), duplicates, the change log, results, every table's
state and the batch rows' counts. It is how crash, soak and fuzz tests prove that a run which
died and ran again stored exactly what one uninterrupted run would have.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, text

from ledger_engine.admission import valid_request_id
from ledger_engine.api import StreamingLedger
from ledger_engine.ingest import IngestedLine, ingest_files
from ledger_engine.model import APPLIED, DUPLICATE, INVALID_EVENT, REJECTED, RunResult
from ledger_engine.serial import run_serial
from ledger_engine.store.state import snapshot_rows
from ledger_engine.values import key_text

MAX_LISTED = 5  # differences listed per kind; the count says how many more


@dataclass(frozen=True)
class Expected:
    """Per line, in batch order: (batch id, position in its batch, outcome, reason, raw)."""

    lines: list[tuple[int, int, str, str | None, bytes]]
    run: RunResult
    files: list[str]


def committed_inputs(engine: Engine) -> list[tuple[int, list[str], int]]:
    """(batch id, input files, events ingested) of every committed batch, in order."""
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT batch_id, input_files, events_ingested FROM ledger_batches ORDER BY 1")
        ).all()
    return [(r.batch_id, list(r.input_files), r.events_ingested) for r in rows]


def expected_outcome(
    ledger: StreamingLedger, inbox: Path, batches: Sequence[tuple[int, list[str], int]]
) -> Expected:
    """What the serial runner makes of the batches' files, read from `inbox`."""
    lines: list[tuple[int, IngestedLine]] = []
    for batch_id, names, _ in batches:
        files = [(name, (inbox / name).read_bytes()) for name in names]
        lines.extend((batch_id, line) for line in ingest_files(files))
    events = [line.event for _, line in lines if line.event is not None]
    run = run_serial(ledger, events)
    assert len(run.outcomes) == len(events), "the serial runner gives every event an outcome"
    outcomes = iter(run.outcomes)
    rejections = iter(run.rejections)
    expected: list[tuple[int, int, str, str | None, bytes]] = []
    for batch_id, line in lines:
        if line.event is None:
            expected.append((batch_id, line.position, REJECTED, INVALID_EVENT, line.raw))
            continue
        status = next(outcomes).status
        reason = next(rejections).reason if status == REJECTED else None
        expected.append((batch_id, line.position, status, reason, line.raw))
    names = [name for _, batch_files, _ in batches for name in batch_files]
    return Expected(expected, run, names)


def serial_differences(
    engine: Engine, ledger: StreamingLedger, inbox: Path, *, complete: bool = True
) -> list[str]:
    """Every way the system of record differs from the serial runner over the files its
    batches took in; empty when it holds exactly what it must. With `complete`, every
    `*.jsonl` file in `inbox` must have been taken in by exactly one batch."""
    batches = committed_inputs(engine)
    found: list[str] = []
    ids = [batch_id for batch_id, _, _ in batches]
    if ids != list(range(len(ids))):
        found.append(f"batch ids are not 0..{len(ids) - 1}: {ids[:10]}")
    names = [name for _, files, _ in batches for name in files]
    doubled = sorted({n for n in names if names.count(n) > 1})
    if doubled:
        found.append(f"files taken in by more than one batch: {doubled[:MAX_LISTED]}")
    if complete:
        missing = sorted({p.name for p in inbox.glob("*.jsonl")} - set(names))
        if missing:
            found.append(f"{len(missing)} landed files in no batch: {missing[:MAX_LISTED]}")
    expected = expected_outcome(ledger, inbox, batches)
    with engine.connect() as conn:
        stored = _stored(conn, ledger)
    for name, want, got in _comparisons(ledger, expected, batches, stored):
        found.extend(_differ(name, want, got))
    return found


def _stored(conn: Any, ledger: StreamingLedger) -> dict[str, Any]:
    def rows(query: str) -> list[tuple]:
        return [tuple(r) for r in conn.execute(text(query))]

    return {
        "lines": rows(
            "SELECT e.batch_id, e.position, e.outcome, r.reason, r.raw_input FROM ledger_events e"
            " LEFT JOIN ledger_rejections r USING (batch_id, position)"
            " ORDER BY e.batch_id, e.position"
        ),
        "rejections": rows(
            "SELECT request_id, reason, detail FROM ledger_rejections"
            " WHERE request_id IS NOT NULL ORDER BY batch_id, position"
        ),
        "duplicates": rows(
            "SELECT request_id, kind FROM ledger_duplicates ORDER BY batch_id, position"
        ),
        "changes": rows(
            "SELECT request_id, table_name, key, before, after FROM ledger_change_log"
            " ORDER BY batch_id, position, seq"
        ),
        "results": rows(
            "SELECT stream, request_id, payload FROM ledger_results"
            " ORDER BY batch_id, position, seq"
        ),
        "counts": rows(
            "SELECT b.batch_id, b.events_ingested, b.applied, b.rejected, b.duplicates,"
            " b.changes, b.results,"
            " (SELECT count(*) FROM ledger_events e WHERE e.batch_id = b.batch_id),"
            " (SELECT count(*) FROM ledger_change_log c WHERE c.batch_id = b.batch_id),"
            " (SELECT count(*) FROM ledger_results r WHERE r.batch_id = b.batch_id)"
            " FROM ledger_batches b ORDER BY b.batch_id"
        ),
        "state": {
            name: [(key, value) for key, value in snapshot_rows(conn, table)]
            for name, table in sorted(ledger.tables.items())
        },
    }


def _comparisons(
    ledger: StreamingLedger,
    expected: Expected,
    batches: Sequence[tuple[int, list[str], int]],
    stored: dict[str, Any],
) -> Iterable[tuple[str, list, list]]:
    run = expected.run
    lines = [
        (b, p, s, r, bytes(raw) if s == REJECTED else None) for b, p, s, r, raw in expected.lines
    ]
    got_lines = [
        (b, p, s, r, bytes(raw) if raw is not None else None) for b, p, s, r, raw in stored["lines"]
    ]
    yield "line outcomes", lines, got_lines
    # Rejections of events without a valid request id are stored with a NULL id.
    yield (
        "rejections",
        [
            (r.request_id, r.reason, r.detail)
            for r in run.rejections
            if valid_request_id(r.request_id)
        ],
        stored["rejections"],
    )
    yield "duplicates", [(d.request_id, d.kind) for d in run.duplicates], stored["duplicates"]
    yield (
        "change log",
        [(c.request_id, c.table, key_text(c.key), c.before, c.after) for c in run.changes],
        stored["changes"],
    )
    yield (
        "results",
        [(r.stream, r.request_id, _json(r.payload)) for r in run.results],
        [(s, rid, _json(p)) for s, rid, p in stored["results"]],
    )
    per_batch = {batch_id: [0, 0, 0] for batch_id, _, _ in batches}
    for batch_id, _, status, _, _ in expected.lines:
        per_batch[batch_id][(APPLIED, REJECTED, DUPLICATE).index(status)] += 1
    yield (
        "batch rows' counts",
        [(b, sum(per_batch[b]), *per_batch[b]) + (True,) * 3 for b, _, _ in batches],
        [
            (b, ingested, applied, rejected, dups, changes == c, results == r, ingested == e)
            for b, ingested, applied, rejected, dups, changes, results, e, c, r in stored["counts"]
        ],
    )
    for name, table in sorted(ledger.tables.items()):
        order = sorted(run.state.get(name, {}).items(), key=lambda kv: _order_key(table, kv[0]))
        yield f"table {name}", order, stored["state"][name]


def _order_key(table: Any, key: Any) -> Any:
    # Snapshots sort text keys by code point (COLLATE "C"), which is UTF-8 byte order.
    return key.encode("utf-8") if table.key_type is str else key


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _differ(name: str, want: list, got: list) -> list[str]:
    if want == got:
        return []
    wrong = [i for i, (w, g) in enumerate(zip(want, got, strict=False)) if w != g]
    found = (
        [f"{name}: expected {len(want)} rows, found {len(got)}"] if len(want) != len(got) else []
    )
    for i in wrong[:MAX_LISTED]:
        found.append(f"{name}[{i}]: expected {want[i]!r:.300}, found {got[i]!r:.300}")
    if len(wrong) > MAX_LISTED:
        found.append(f"{name}: {len(wrong) - MAX_LISTED} more rows differ")
    return found
