"""The columnar engine's Spark tasks: each a `mapInArrow` function over parcels.

Every task reads and writes `columnar.parcels.PARCEL` rows, so that Spark moves a few large
binary values where it used to move a row per event. The work itself is the Spark-free
kernels of `ledger_engine.runtime.columnar`; a task only opens its parcels, calls its kernel
and seals what comes out, timing its phases (`profile.TaskClock`).
"""

from __future__ import annotations

import itertools
import pickle
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
from pyspark import TaskContext
from pyspark.broadcast import Broadcast

from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.core.ingest import nonblank_lines
from ledger_engine.core.records import Event
from ledger_engine.runtime.columnar import parcels as P
from ledger_engine.runtime.columnar.admission import FINGERPRINTS_SCHEMA, positions_of
from ledger_engine.runtime.columnar.executing import (
    CHUNK,
    RowSource,
    execute_slot,
    settle_partition,
)
from ledger_engine.runtime.columnar.journal import (
    Digests,
    Verdicts,
    digests_table,
    lines_part,
    part_table,
    settled_part,
    slot_part,
)
from ledger_engine.runtime.columnar.planning import PlanRequest, planned_batch, routing_of
from ledger_engine.runtime.columnar.routing import routed_tables
from ledger_engine.runtime.columnar.screening import UnitScreening, event_of_record
from ledger_engine.runtime.columnar.settling import settle_pending
from ledger_engine.runtime.gc_pause import gc_paused
from ledger_engine.runtime.spark.profile import TaskClock

Task = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def _profile(clock: TaskClock) -> pa.RecordBatch:
    return P.parcel(P.PROFILE, pa.table({"report": pa.array([clock.report()], pa.binary())}))


def _screened(screening: UnitScreening, clock: TaskClock) -> Iterator[pa.RecordBatch]:
    clock.lap("screen")
    rows = [
        (P.ADMISSION, -1, 0, 0, P.sealed(screening.admission())),
        (P.EVENTS, -1, 0, 0, P.sealed(screening.stored_events())),
        (P.ENDED, -1, 0, 0, P.sealed(screening.ended())),
        (P.COUNT, -1, 0, 0, P.sealed(screening.unit_counts())),
    ]
    lines = screening.journal_lines()
    if lines is not None:
        rows.append((P.LINES, -1, 0, 0, P.sealed(lines)))
    yield P.parcels(rows)
    clock.lap("seal")


def _screened_file(
    ledger: StreamingLedger,
    unit: int,
    name: str,
    content: bytes,
    clock: TaskClock,
    journal: bool = False,
) -> Iterator[pa.RecordBatch]:
    """The parcels of one file's screening (its lines kept for the journal if `journal`)."""
    screening = UnitScreening(ledger, journal)
    screening.lines(unit, name, nonblank_lines(content))
    clock.items += screening.counts[unit]
    yield from _screened(screening, clock)


def _journal(
    slot: int, part: dict[str, tuple[int, bytes]], digests: Digests
) -> list[tuple[int, int, int, int, bytes]]:
    """A task's journal part and Merkle deltas (none: no parcel) as parcel rows (`slot`:
    which task of its stage wrote them)."""
    rows = [(P.JOURNAL, slot, 0, 0, P.sealed(part_table(part)))]
    if digests:
        rows.append((P.DIGESTS, slot, 0, 0, P.sealed(digests_table(digests))))
    return rows


def screen_chunks_task(ledger: StreamingLedger) -> Task:
    """Screening of in-memory events: input rows are (unit, chunk), a chunk a pickle of the
    unit's events as (stream, request_id, payload) tuples."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        clock = TaskClock("screen")
        with gc_paused():
            for batch in batches:
                clock.lap("input")
                units = batch.column("unit").to_pylist()
                for unit, chunk in zip(units, batch.column("chunk").to_pylist(), strict=True):
                    events = [Event(*fields) for fields in pickle.loads(chunk)]
                    clock.items += len(events)
                    screening = UnitScreening(ledger)
                    screening.events(unit, events)
                    yield from _screened(screening, clock)
        yield _profile(clock)

    return task


def screen_files_task(ledger: StreamingLedger) -> Task:
    """Screening of event files: input rows are (units, paths), the files a task reads."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        clock = TaskClock("screen")
        with gc_paused():
            for batch in batches:
                units = batch.column("units").to_pylist()
                paths = batch.column("paths").to_pylist()
                for unit, path in zip(
                    itertools.chain(*units), itertools.chain(*paths), strict=True
                ):
                    content = Path(path).read_bytes()
                    clock.lap("input")
                    yield from _screened_file(ledger, unit, Path(path).name, content, clock)
        yield _profile(clock)

    return task


def screen_frame_task(ledger: StreamingLedger, column: str) -> Task:
    """Screening of a DataFrame of lines: the task's partition is its unit, its rows (the
    non-blank values of `column`, text or bytes) its lines in order."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        clock = TaskClock("screen")
        unit = TaskContext.get().partitionId()
        lines: list[tuple[int, bytes]] = []
        number = 0
        with gc_paused():
            for batch in batches:
                clock.lap("input")
                for value in batch.column(column).to_pylist():
                    number += 1
                    raw = value.encode("utf-8", "surrogatepass") if type(value) is str else value
                    if raw is not None and raw.strip(b" \t\r\n"):
                        lines.append((number, raw.rstrip(b"\r\n")))
            clock.items += len(lines)
            screening = UnitScreening(ledger)
            screening.lines(unit, None, lines)
            yield from _screened(screening, clock)
        yield _profile(clock)

    return task


def screen_contents_task(ledger: StreamingLedger, units: dict[str, int]) -> Task:
    """Screening of landed files for the system of record: input rows are (name, content),
    `units` numbers the files; each unit's lines are kept for the journal (LINES)."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        clock = TaskClock("screen")
        with gc_paused():
            for batch in batches:
                names = batch.column("name").to_pylist()
                contents = batch.column("content").to_pylist()
                clock.lap("input")
                for name, content in zip(names, contents, strict=True):
                    yield from _screened_file(
                        ledger, units[name], name, content or b"", clock, journal=True
                    )
        yield _profile(clock)

    return task


def lines_task(batch_id: int, verdicts: Broadcast) -> Task:
    """Each unit's lines (LINES parcels) as its journal part, the batch's verdicts known."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        clock = TaskClock("journal lines")
        known: Verdicts = verdicts.value
        for _, _, _, lines in P.unpacked(batches):
            clock.lap("input")
            clock.items += len(lines)
            unit = int(lines.column("unit")[0].as_py()) if len(lines) else -1
            part = lines_part(batch_id, lines, known)
            clock.lap("encode")
            if part:
                yield P.parcels(_journal(unit, part, {}))
        yield _profile(clock)

    return task


def fingerprint_task(ledger: StreamingLedger, wanted: Broadcast, offsets: np.ndarray) -> Task:
    """The fingerprints of the stored events at the `wanted` positions (a sorted array)."""
    from ledger_engine.core.admission import screen

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        positions = wanted.value
        found: dict[str, list] = {"position": [], "fingerprint": []}
        for _, _, _, events in P.unpacked(batches):
            position = positions_of(events, offsets)
            hit = np.flatnonzero(np.isin(position, positions))
            blobs = events.column("event")
            for i in hit:
                event, _ = event_of_record(blobs[int(i)].as_py())
                found["position"].append(int(position[i]))
                found["fingerprint"].append(screen(ledger.streams, event).fingerprint)
        yield P.parcel(P.FINGERPRINTS, pa.table(found, schema=FINGERPRINTS_SCHEMA))

    return task


def plan_task(request: Broadcast) -> Task:
    """The batch's plan (`columnar.planning`) as one PLAN parcel (`PLAN_SCHEMA`: its shape and
    its routing sealed); its input is a single placeholder row. The driver forwards the sealed
    routing to the route tasks as it is: it never holds the plan's arrays."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        clock = TaskClock("plan")
        for _ in batches:  # the placeholder
            pass
        asked: PlanRequest = request.value
        clock.lap("input")
        planned = planned_batch(asked)
        clock.items += len(asked.runnable)
        clock.lap("plan")
        # Not compressed again: the routing is sealed compressed already.
        yield P.parcels([(P.PLAN, -1, 0, 0, P.sealed(planned.shape(), compressed=False))])
        clock.lap("seal")
        yield _profile(clock)

    return task


def route_task(plan: Broadcast, routes: tuple[int, ...]) -> Task:
    """Stored events (EVENTS parcels) cut into one ROUTED parcel per slot; `plan` holds the
    routing plan sealed (`planning.sealed_routing`)."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        clock = TaskClock("route")
        routing = routing_of(plan.value)
        bins = len(routes)
        clock.lap("plan")
        for _, _, _, events in P.unpacked(batches):
            clock.lap("input")
            clock.items += len(events)
            rows = [
                (P.ROUTED, slot, routes[slot % bins], 0, P.sealed(table))
                for slot, table in routed_tables(events, routing)
            ]
            clock.lap("route")
            if rows:
                yield P.parcels(rows)
        yield _profile(clock)

    return task


def execute_task(
    ledger: StreamingLedger,
    source: RowSource,
    round_: int,
    routes: tuple[int, ...],
    journal: int | None = None,
    chunk: int = CHUNK,
) -> Task:
    """Runs the slot of one round whose parcels (ROUTED events, ROWS handed on) the task got,
    `chunk` events at a time; with `journal` (a batch id), it also encodes its journal part
    (`columnar.journal`)."""
    bins = len(routes)

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        clock = TaskClock(f"round {round_}")
        routed: list[pa.Table] = []
        handed: list[tuple[int, pa.Table]] = []
        slots: set[int] = set()
        for kind, slot, part, table in P.unpacked(batches):
            slots.add(slot)
            if kind == P.ROUTED:
                routed.append(table)
            else:
                assert kind == P.ROWS, kind
                handed.append((int(part), table))
        clock.lap("input")
        if not slots:
            yield _profile(clock)
            return
        assert len(slots) == 1, f"one slot per task, got {sorted(slots)}"
        source.open()
        try:
            with gc_paused():
                out = execute_slot(ledger, routed, handed, source, clock.lap, chunk)
        finally:
            source.close()
        clock.items += out.events
        rows = [
            (P.OUTCOMES, -1, 0, 0, P.sealed(out.outcomes)),
            (P.RESULTS, -1, 0, 0, P.sealed(out.results)),
            *((P.CHANGES, -1, 0, i, P.sealed(t)) for i, t in out.changes.items()),
        ]
        for dest, tables in out.handed.items():
            rows.extend(
                (P.ROWS, dest, routes[dest % bins], i, P.sealed(t)) for i, t in tables.items()
            )
        if len(out.pending):
            partition = settle_partition(out.pending, bins)
            for p in np.unique(partition):
                part = out.pending.filter(pa.array(partition == p))
                rows.append((P.PENDING, int(p), routes[int(p)], 0, P.sealed(part)))
        if journal is not None:
            clock.lap("seal")
            rids = pa.array(out.request_ids, pa.string())
            csv, digests = slot_part(ledger, journal, out.changes, out.results, out.positions, rids)
            rows.extend(_journal(slots.pop(), csv, digests))
            clock.lap("journal")
        yield P.parcels(rows)
        clock.lap("seal")
        yield _profile(clock)

    return task


def settle_task(ledger: StreamingLedger, source: RowSource, journal: int | None = None) -> Task:
    """Settles the deferred rows whose PENDING parcels the task got; with `journal` (a batch
    id), it also encodes its journal part (`columnar.journal`)."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        clock = TaskClock("settle")
        tables = [table for _, _, _, table in P.unpacked(batches)]
        clock.lap("input")
        if not tables:
            yield _profile(clock)
            return
        pending = pa.concat_tables(tables)
        clock.items += len(pending)
        source.open()
        try:
            settled, overflowed = settle_pending(ledger, pending, source)
        finally:
            source.close()
        clock.lap("settle")
        rows = [
            (P.SETTLED, -1, 0, 0, P.sealed(settled)),
            (P.OVERFLOWED, -1, 0, 0, P.sealed(overflowed)),
        ]
        if journal is not None:
            csv, digests = settled_part(ledger, journal, settled)
            rows.extend(_journal(TaskContext.get().partitionId(), csv, digests))
            clock.lap("journal")
        yield P.parcels(rows)
        yield _profile(clock)

    return task
