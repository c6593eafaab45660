"""The full re-derivation: the stored event log re-executed from an empty ledger by the serial
runner, and compared with everything PostgreSQL holds.

`replay_checks` reads `ledger_events` in (batch, position) order, rebuilds each line's event,
runs the lines chunk by chunk with the serial runner (chained: one run over the whole log), and
compares every event's outcome, the event log, rejections, duplicates, executed request ids,
the change log, results, every batch row's counts and every table's rows with the store
(`compare`). Each check names the batch, position, request, table and key of its first
differences. It reads in one consistent read and holds one chunk of lines at a time, so it
runs beside the pipeline and scales with the log: memory is one chunk, the tables' state and a
fingerprint per executed request id (about 240 bytes each).

Rebuilding a line's event, exactly where the store can:

- A rejected line's bytes are kept (`ledger_rejections.raw_input`): the line is parsed again,
  as ingest parsed it (`ingest.parse_line`), so the replay sees exactly the event the engine
  saw, floats and all, or the same reason the line holds none. The stored event columns are
  then checked against those bytes ("event log").
- An applied or duplicate line keeps no bytes: its event is rebuilt from the event log's
  stream, request id and `jsonb` payload. That is its *stored form* (`stored_form`): `jsonb`
  reads a float of 1e16 or more back as an int and -0.0 as 0.0. An applied event's payload is
  one its stream accepted (for the bank ledger: integer amounts only), so this loses nothing
  there.
- Fingerprints, which tell a retry (`exists`) from a clash, are taken of every event's stored
  form (`StoredFormEvent`), so that a duplicate rebuilt from columns compares with a first
  event parsed from bytes as the originals compared: equal originals have equal stored forms.
  Only when two different originals share a stored form (a float and an int of the same value,
  two payloads that are not objects, the streams 5 and "5") does the store itself not say
  which; such a duplicate stored as a clash is then not reported. The fingerprint each executed
  request stored (`ledger_requests`) is of the event as executed: it is compared with the
  event's own, so that an event-log payload changed behind the engine's back is named even
  where it changes nothing else (not where its stored form is ambiguous, as above).
- Results, change-log values and table values are compared in the stored form on both sides.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Engine

from ledger_engine.audit.findings import CheckResult
from ledger_engine.audit.rederivation.compare import Rederivation
from ledger_engine.audit.rederivation.expected import Line, LineRecord
from ledger_engine.audit.rederivation.stored_form import StoredFormEvent
from ledger_engine.audit.rederivation.stored_log import StoredLog, batch_rows, consistent_read
from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.core.ingest import parse_line
from ledger_engine.core.records import Event
from ledger_engine.store.schema import check_declared_schema

SUITE = "replay"
CHUNK_LINES = 5_000  # lines re-executed and compared at a time (about 7 MB per 1,000)


@dataclass(frozen=True)
class ReplayProgress:
    """Where a replay is, for a progress callback: after every chunk of lines, before each
    table's comparison and once at the end."""

    phase: str  # "events", "tables" or "done"
    events_done: int
    events_total: int  # the batch rows' count of ingested lines
    batches_done: int  # batches whose every line is replayed
    batches_total: int
    batch_id: int | None  # the batch of the last line replayed
    table: str | None  # the table being compared (phase "tables")
    differences: int  # found so far, by every check
    elapsed_seconds: float

    @property
    def fraction(self) -> float:
        """Share of the lines replayed (1.0 for an empty log)."""
        return self.events_done / self.events_total if self.events_total else 1.0

    @property
    def events_per_second(self) -> float:
        return self.events_done / self.elapsed_seconds if self.elapsed_seconds > 0 else 0.0

    @property
    def eta_seconds(self) -> float | None:
        """Seconds left for the lines at the rate so far (None before any rate is known)."""
        rate = self.events_per_second
        if self.phase != "events" or rate == 0:
            return None
        return max(self.events_total - self.events_done, 0) / rate

    def describe(self) -> str:
        """One line for a log."""
        if self.phase == "tables":
            where = f"comparing table {self.table}"
        elif self.phase == "done":
            where = "done"
        else:
            eta = self.eta_seconds
            where = (
                f"{self.events_done:,}/{self.events_total:,} events ({self.fraction:.0%}),"
                f" batch {self.batch_id}, {self.batches_done}/{self.batches_total} batches,"
                f" {self.events_per_second:,.0f} events/s"
                + (f", about {eta:,.0f} s left" if eta is not None else "")
            )
        return (
            f"replay: {where}; {self.differences} difference(s) so far;"
            f" {self.elapsed_seconds:,.1f} s"
        )


Progress = Callable[[ReplayProgress], None]


def replayed_line(record: LineRecord) -> Line:
    """The line a stored event log row was made from, as exactly as the store keeps it."""
    where = (record.batch_id, record.position, record.source_file, record.line_number)
    if record.raw is not None:
        parsed = parse_line(record.raw)
        if isinstance(parsed, str):
            return Line(*where, record.raw, None, parsed)
        event = StoredFormEvent(parsed.stream, parsed.request_id, parsed.payload)
        return Line(*where, record.raw, event)
    event = Event(record.stream, record.request_id, record.payload)
    return Line(*where, None, event, exact=False)


def replay_checks(
    engine: Engine,
    ledger: StreamingLedger,
    on_progress: Progress | None = None,
    *,
    chunk_lines: int = CHUNK_LINES,
) -> list[CheckResult]:
    """Re-execute the stored event log from an empty ledger with the serial runner and compare
    everything with PostgreSQL: one `CheckResult` (suite "replay") per compared thing, each
    failing with its first differences in plain words.

    `on_progress` is called with a `ReplayProgress` after each chunk of `chunk_lines` lines,
    before each table's comparison, and at the end.
    """
    if chunk_lines < 1:
        raise ValueError(f"chunk_lines must be >= 1, got {chunk_lines}")
    started = time.monotonic()
    with consistent_read(engine) as conn:
        check_declared_schema(conn, ledger)
        batches = batch_rows(conn)
        batch_ids = [row.batch_id for row in batches]
        total = sum(row.ingested for row in batches)
        log = StoredLog(conn)
        rederivation = Rederivation(ledger, log)

        def report(phase: str, batch_id: int | None = None, table: str | None = None) -> None:
            if on_progress is None:
                return
            # Batches before the last line's are done; all of them once no line is left.
            done = len(batch_ids) if log.exhausted else bisect.bisect_left(batch_ids, batch_id)
            on_progress(
                ReplayProgress(
                    phase, rederivation.lines_done, total, done, len(batch_ids), batch_id,
                    table, rederivation.differences, time.monotonic() - started,
                )
            )  # fmt: skip

        while True:
            records, end = log.next_lines(chunk_lines)
            if records:
                rederivation.chunk([replayed_line(r) for r in records], records, end)
                report("events", batch_id=records[-1].batch_id)
            if end is None:
                break
        tallies = rederivation.finish(conn, batches, lambda name: report("tables", table=name))
        log.close()
    report("done")
    return [
        CheckResult(SUITE, name, tally.count == 0, tuple(tally.findings()))
        for name, tally in tallies.items()
    ]
