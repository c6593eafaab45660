"""The columnar engine on Spark: a batch from its units to a `ColumnarRunResult`.

The driver handles only what is per batch or per task: the list of units, counts, a plan
made of arrays, parcels of columns. Every event is read, screened, routed, executed and
settled in the executors; between them Spark moves parcels (`columnar.parcels`), a few
binary values of megabytes each, never a row per event.

1. **Screen** (one task per unit group): each unit's events are parsed and screened where
   they lie; the admission columns (request ids, row ids) go to the driver, the events stay
   in Spark's cache as parcels.
2. **Admit** (driver, array operations only): positions from the units' counts, duplicates
   by request id (`columnar.admission`). A duplicate's kind needs two fingerprints: a small
   job works them out for those events alone.
   **Plan** (one task, `columnar.planning`): from the runnable events' access columns, the
   plan (`ledger_engine.runtime.parallel.plan`: rounds, bins, deferred rows) and where each
   row goes between rounds (`columnar.carry`). The driver receives the plan's shape and its
   routing sealed, which it forwards as it is: about a microsecond of array work per event
   that the driver does not do.
3. **Route**: the cached events are cut into one parcel per slot (round, bin).
4. **Execute**, round by round: a round's parcels and the rows earlier rounds handed on are
   shuffled to the task of their bin, which runs them in batch order.
5. **Settle** the deferred rows' adds, by row. A row whose running total overflowed is
   planned again as ordered (step 2 on), as the serial runner would have rejected the add.
6. **Collect** the parcels of outcomes, changes and results to the driver and join them into
   Arrow tables.

A batch with no parallelism in it (one conflict component) is planned into one slot: one
task runs it serially, decided from the plan's arrays.
"""

from __future__ import annotations

import heapq
import pickle
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ledger_engine.core.declarations import StreamingLedger, Table
from ledger_engine.core.records import Event
from ledger_engine.core.stopwatch import Stopwatch
from ledger_engine.runtime.columnar import parcels as P
from ledger_engine.runtime.columnar.admission import (
    FINGERPRINTS_SCHEMA,
    Admitted,
    KnownLookup,
    admit_columns,
    positions_of,
    unit_offsets,
)
from ledger_engine.runtime.columnar.executing import (
    CHUNK,
    RESULTS_SCHEMA,
    RowSource,
    changes_schema,
)
from ledger_engine.runtime.columnar.executing import (
    OUTCOMES_SCHEMA as EXECUTED_SCHEMA,
)
from ledger_engine.runtime.columnar.journal import (
    Digests,
    Verdicts,
    add_digests,
    journal_part,
)
from ledger_engine.runtime.columnar.planning import (
    PLAN_INPUT_COLUMNS,
    PlanRequest,
)
from ledger_engine.runtime.columnar.result import (
    REJECTIONS_SCHEMA,
    ColumnarRunResult,
    outcomes_table,
)
from ledger_engine.runtime.columnar.screening import (
    ADMISSION_SCHEMA,
    COUNTS_SCHEMA,
    ENDED_SCHEMA,
)
from ledger_engine.runtime.columnar.settling import OVERFLOWED_SCHEMA, SETTLED_SCHEMA
from ledger_engine.runtime.columnar.state import ColumnarState
from ledger_engine.runtime.columnar.typed import key_type
from ledger_engine.runtime.parallel.plan import replanned, row_id
from ledger_engine.runtime.spark import tasks
from ledger_engine.runtime.spark.profile import task_profile
from ledger_engine.runtime.spark.shipping import ship_application
from ledger_engine.store.staging import JournalPart

T = TypeVar("T")


@dataclass(frozen=True)
class ExecutionOptions:
    """How a batch is spread over Spark tasks.

    `bins`: tasks per round (default: the session's default parallelism). `round_cost`: what
    a round's fixed cost (a Spark job) is worth in executed transactions, for choosing the
    number of rounds. `rounds`: a fixed number of rounds instead. `chunk`: how many events a
    task reads rows for and executes at a time (`columnar.executing.CHUNK`).
    """

    bins: int | None = None
    round_cost: int = 20_000
    rounds: int | None = None
    chunk: int = CHUNK


class Units(Protocol):
    """A batch's events as units that Spark tasks read (`columnar.screening`)."""

    def count(self) -> int:
        """How many units there are (numbered from 0 in batch order)."""
        ...

    def screened(self, spark: SparkSession, ledger: StreamingLedger) -> DataFrame:
        """The parcels of the units' screening (a DataFrame of `PARCEL` rows)."""
        ...


@dataclass(frozen=True)
class EventChunks:
    """In-memory events, shipped from the driver in pickled chunks of `size`."""

    events: Sequence[Event]
    size: int = 5_000

    def count(self) -> int:
        return -(-len(self.events) // self.size)

    def screened(self, spark: SparkSession, ledger: StreamingLedger) -> DataFrame:
        chunks = [
            pickle.dumps(
                [(e.stream, e.request_id, e.payload) for e in self.events[s : s + self.size]],
                pickle.HIGHEST_PROTOCOL,
            )
            for s in range(0, len(self.events), self.size)
        ]
        table = pa.table(
            {
                "unit": pa.array(range(len(chunks)), pa.int32()),
                "chunk": pa.array(chunks, pa.binary()),
            }
        )
        frame = spark.createDataFrame(table).repartition(
            min(max(len(chunks), 1), spark.sparkContext.defaultParallelism * 4)
        )
        return frame.mapInArrow(tasks.screen_chunks_task(ledger), P.PARCEL_DDL)


@dataclass(frozen=True)
class EventFiles:
    """Files of JSON lines (the landing format): a batch in the order of their paths, then
    of their lines.

    The tasks read the files themselves, so the JVM handles a file list and not their
    content: reading them through Spark's file source cost its JVM about 8 CPU seconds per
    10^6 events and packed them into as few tasks as its 128 MB partitions allow. The files
    are dealt into tasks by size (largest first, each to the lightest task): as many tasks
    as there are files, at most four per core. Every executor must see the files at their
    paths (a local run, or a shared volume, as with Spark's own file sources).
    """

    paths: Sequence[Path]

    def count(self) -> int:
        return len(self.paths)

    def _ordered(self) -> list[Path]:
        ordered = sorted(Path(p).resolve() for p in self.paths)
        assert len(set(ordered)) == len(ordered), "each file once"
        return ordered

    def screened(self, spark: SparkSession, ledger: StreamingLedger) -> DataFrame:
        ordered = self._ordered()
        tasks_count = max(1, min(len(ordered), spark.sparkContext.defaultParallelism * 4))
        groups: list[list[int]] = [[] for _ in range(tasks_count)]
        loads = [(0, g) for g in range(tasks_count)]
        sizes = [p.stat().st_size for p in ordered]
        for unit in sorted(range(len(ordered)), key=lambda u: -sizes[u]):
            load, group = heapq.heappop(loads)
            groups[group].append(unit)
            heapq.heappush(loads, (load + sizes[unit], group))
        rows = [([u for u in group], [str(ordered[u]) for u in group]) for group in groups if group]
        frame = spark.sparkContext.parallelize(rows, max(len(rows), 1)).toDF(
            "units array<int>, paths array<string>"
        )
        return frame.mapInArrow(tasks.screen_files_task(ledger), P.PARCEL_DDL)


@dataclass(frozen=True)
class LandedContents:
    """Landed files as a (name, content) DataFrame, for the system of record: a batch in the
    order of `names` (every name in the frame, once), then of their lines. Each file's lines
    are kept for the batch's journal (`columnar.journal`)."""

    frame: DataFrame
    names: Sequence[str]

    def count(self) -> int:
        return len(self.names)

    def screened(self, spark: SparkSession, ledger: StreamingLedger) -> DataFrame:
        units = {name: unit for unit, name in enumerate(self.names)}
        assert len(units) == len(self.names), "each file once"
        tasks_count = max(1, min(len(units), spark.sparkContext.defaultParallelism * 4))
        return self.frame.repartition(tasks_count).mapInArrow(
            tasks.screen_contents_task(ledger, units), P.PARCEL_DDL
        )


@dataclass(frozen=True)
class EventFrame:
    """A DataFrame of JSON lines in `column` (text or bytes): a batch in the order of its
    partitions, then of their rows. The frame must give the same rows in the same order
    each time it is read (a file source, or a cached frame)."""

    frame: DataFrame
    column: str = "value"

    def count(self) -> int:
        return self.frame.rdd.getNumPartitions()

    def screened(self, spark: SparkSession, ledger: StreamingLedger) -> DataFrame:
        lines = self.frame.select(self.column)
        return lines.mapInArrow(tasks.screen_frame_task(ledger, self.column), P.PARCEL_DDL)


@dataclass(frozen=True)
class StateRows:
    """Rows read from a state broadcast to the workers (`columnar.state.ColumnarState`)."""

    state: Any  # a Broadcast of a ColumnarState

    def open(self) -> None:
        self.state.value  # noqa: B018 - loads the broadcast once per worker

    def read(self, round_: int, table: Table, keys: Sequence[Any]) -> dict[Any, Any]:
        rows = self.state.value.rows(table.name)
        return {key: rows[key] for key in keys if key in rows}

    def in_memory(self, table: Table) -> Mapping[Any, Any]:
        return self.state.value.rows(table.name)

    def close(self) -> None:
        pass


@dataclass
class EngineProfile:
    """Where a run's time went: the driver's wall seconds by phase and its CPU seconds, the
    tasks' profile by stage (`profile.task_profile`), the plan's rounds and slots."""

    events: int = 0
    rounds: int = 0
    slots: int = 0
    replans: int = 0
    driver_seconds: dict[str, float] = field(default_factory=dict)
    driver_cpu: dict[str, float] = field(default_factory=dict)
    tasks: dict[str, Any] = field(default_factory=dict)

    @property
    def driver_cpu_us_per_event(self) -> float:
        """The driver's CPU per event (microseconds), all phases."""
        return sum(self.driver_cpu.values()) * 1e6 / max(self.events, 1)


def run_columnar(
    spark: SparkSession,
    ledger: StreamingLedger,
    units: Units,
    state: Mapping[str, Mapping[Any, Any]],
    known: KnownLookup | None,
    options: ExecutionOptions | None = None,
) -> tuple[ColumnarRunResult, EngineProfile]:
    """Run a batch given as `units` from `state` (a checked state: table -> key -> value,
    every table present), after the request ids `known` to earlier batches (None: none)."""

    def result(ran: _Ran) -> ColumnarRunResult:
        return _result(ledger, ran)

    def source(broadcasts: list[Any]) -> RowSource:
        shipped = ColumnarState(ledger, state)
        return StateRows(_kept(broadcasts, spark.sparkContext.broadcast(shipped)))

    return _run(spark, ledger, units, source, known, options, None, None, result)


@dataclass(frozen=True)
class BatchJournal:
    """A batch run for the system of record: its journal parts (`staging.JournalPart`, one
    per task that wrote some) and the Merkle deltas of the rows it changed."""

    events: int
    parts: tuple[JournalPart, ...]
    digests: Digests


def journal_batch(
    spark: SparkSession,
    ledger: StreamingLedger,
    units: Units,
    rows: RowSource,
    known: KnownLookup | None,
    batch_id: int,
    options: ExecutionOptions | None = None,
    after_round: Callable[[int], None] | None = None,
) -> tuple[BatchJournal, EngineProfile]:
    """Run a batch given as `units` (which keep their lines: `LandedContents`) from the rows
    `rows` reads, after the request ids `known` to earlier batches, into its journal for
    batch `batch_id`: encoded by the tasks, never by the driver. `after_round(r)` is called
    once round `r` has run."""

    def journal(ran: _Ran) -> BatchJournal:
        executed = _table(ran.outputs, P.OUTCOMES, EXECUTED_SCHEMA)
        rejections, duplicates = _verdicts(ran, executed)
        verdicts = Verdicts.of(ran.offsets, rejections, duplicates)
        shared = _kept(ran.broadcasts, spark.sparkContext.broadcast(verdicts))
        lines = ran.screened.where(F.col("kind") == P.LINES)
        written = _opened(lines.mapInArrow(tasks.lines_task(batch_id, shared), P.PARCEL_DDL))
        parts = [
            *_parts(ran.outputs, ran.stages),
            *_parts(ran.settled, ["settle"] * len(ran.settled)),
            *_parts(written, ["lines"] * len(written)),
        ]
        ran.profiled.extend(written)
        digests: Digests = {}
        for opened in (ran.outputs, ran.settled):
            for table in _all(opened, P.DIGESTS):
                add_digests(digests, table)
        ran.clock.lap("journal lines")
        return BatchJournal(int(ran.offsets[-1]), tuple(parts), digests)

    return _run(
        spark, ledger, units, lambda _: rows, known, options, batch_id, after_round, journal
    )


@dataclass
class _Ran:
    """A batch that ran: what the driver collected, while its frames are still cached."""

    screened: DataFrame
    collected: Opened
    outputs: Opened
    stages: list[str]  # of each parcel of `outputs`: the stage (round) it came from
    settled: Opened
    admitted: Admitted
    fingerprints: pa.Table
    offsets: np.ndarray
    broadcasts: list[Any]
    clock: Stopwatch
    profiled: Opened = field(default_factory=list)  # other parcels with task profiles


@dataclass
class _Driver:
    """A batch's run on the driver: its session and ledger, how it runs (options, bins, the
    routes to each bin), what it must release at the end (cached frames, broadcasts), the
    parcels whose task profiles it reports, its clock and its profile."""

    spark: SparkSession
    ledger: StreamingLedger
    options: ExecutionOptions
    bins: int
    routes: tuple[int, ...]
    journal: int | None
    after_round: Callable[[int], None] | None
    profile: EngineProfile = field(default_factory=EngineProfile)
    frames: list[DataFrame] = field(default_factory=list)
    broadcasts: list[Any] = field(default_factory=list)
    profiled: Opened = field(default_factory=list)  # parcels `_Ran` does not otherwise hold
    clock: Stopwatch = field(init=False)

    def __post_init__(self) -> None:
        # The driver's CPU is the calling thread's: every step of a batch on the driver runs
        # in it, and a process-wide clock also charged it with whatever else its process runs
        # (a benchmark's sampling thread cost 10-15% of a core).
        seconds, cpu = self.profile.driver_seconds, self.profile.driver_cpu
        self.clock = Stopwatch(time.thread_time, seconds, cpu)

    @classmethod
    def start(
        cls,
        spark: SparkSession,
        ledger: StreamingLedger,
        options: ExecutionOptions | None,
        journal: int | None,
        after_round: Callable[[int], None] | None,
    ) -> _Driver:
        """A run of `ledger` on `spark`, its code shipped to the executors."""
        ledger.check()
        ship_application(spark, ledger)  # so that the executors can import its functions
        options = options or ExecutionOptions()
        bins = options.bins or spark.sparkContext.defaultParallelism
        return cls(spark, ledger, options, bins, routes_for(spark, bins), journal, after_round)

    def admitted(
        self, units: Units, known: KnownLookup | None
    ) -> tuple[DataFrame, Opened, np.ndarray, Admitted]:
        """The batch screened (cached until the end), what screening sent the driver, each
        unit's offset in batch order, and the admission of its events."""
        screened = _kept(self.frames, units.screened(self.spark, self.ledger).persist())
        collected = _opened(screened.where(~F.col("kind").isin(P.EVENTS, P.LINES)))
        self.clock.lap("screen")
        offsets = unit_offsets(_table(collected, P.COUNT, COUNTS_SCHEMA), units.count())
        self.profile.events = int(offsets[-1])
        admitted = admit_columns(
            _in_unit_order(collected, P.ADMISSION, ADMISSION_SCHEMA), offsets, known
        )
        self.clock.lap("admit")
        return screened, collected, offsets, admitted

    def attempt(
        self, events: DataFrame, admitted: Admitted, offsets: np.ndarray, source: StateRows
    ) -> Callable[[frozenset[int]], tuple[Any, frozenset[int]]]:
        """One planning and run of the batch's events with some rows forced ordered, for
        `plan.replanned`: the rounds' and settling's parcels, or None and the rows that
        overflowed."""

        def attempt(forced: frozenset[int]) -> tuple[Any, frozenset[int]]:
            planned, planning = _plan(
                self.spark, admitted, offsets, self.bins, self.options, forced, self.broadcasts
            )
            self.profiled.extend(planning)
            self.profile.rounds, self.profile.slots = planned.rounds, planned.slots
            self.clock.lap("plan")
            executed = _execute(
                self.spark,
                self.ledger,
                events,
                planned,
                self.options.chunk,
                self.routes,
                source,
                self.frames,
                self.broadcasts,
                self.clock,
                self.journal,
                self.after_round,
            )
            overflowed = _table(executed[2], P.OVERFLOWED, OVERFLOWED_SCHEMA)
            if len(overflowed):
                return None, _row_ids(self.ledger, overflowed)
            return executed, frozenset()

        return attempt

    def release(self) -> None:
        """Give back what the run kept: its cached frames and its broadcasts."""
        for frame in self.frames:
            frame.unpersist()
        for broadcast in self.broadcasts:
            broadcast.destroy()


def _run(
    spark: SparkSession,
    ledger: StreamingLedger,
    units: Units,
    source_of: Callable[[list[Any]], RowSource],
    known: KnownLookup | None,
    options: ExecutionOptions | None,
    journal: int | None,
    after_round: Callable[[int], None] | None,
    finish: Callable[[_Ran], T],
) -> tuple[T, EngineProfile]:
    driver = _Driver.start(spark, ledger, options, journal, after_round)
    clock, profile = driver.clock, driver.profile
    try:
        source = source_of(driver.broadcasts)
        clock.lap("ship state")
        screened, collected, offsets, admitted = driver.admitted(units, known)
        fingerprints = _fingerprints(spark, ledger, screened, admitted, offsets, driver.broadcasts)
        clock.lap("fingerprint duplicates")
        events = screened.where(F.col("kind") == P.EVENTS)
        attempt = driver.attempt(events, admitted, offsets, source)
        (outputs, stages, settled), profile.replans = replanned(attempt)
        ran = _Ran(
            screened,
            collected,
            outputs,
            stages,
            settled,
            admitted,
            fingerprints,
            offsets,
            driver.broadcasts,
            clock,
            driver.profiled,
        )
        finished = finish(ran)
        profile.tasks = task_profile(
            report
            for reports in _all(collected + outputs + settled + ran.profiled, P.PROFILE)
            for report in reports.column("report").to_pylist()
        )
        clock.lap("collect")
        return finished, profile
    finally:
        driver.release()


def _parts(opened: Opened, stages: Sequence[str]) -> list[JournalPart]:
    """The journal parts among `opened` parcels, each named by its stage and task."""
    return [
        journal_part(f"{stage}:{slot}", table)
        for (kind, slot, _, table), stage in zip(opened, stages, strict=True)
        if kind == P.JOURNAL
    ]


def routes_for(spark: SparkSession, partitions: int) -> tuple[int, ...]:
    """For each partition number `p`, a value whose hash sends a parcel to partition `p` when
    repartitioning by it into `partitions` partitions (Spark's own Murmur3 hash, so exact)."""
    found = (
        spark.range(0, 64 * partitions)
        .select("id", F.expr(f"pmod(hash(id), {partitions})").alias("p"))
        .groupBy("p")
        .agg(F.min("id").alias("id"))
        .collect()
    )
    routes = {row.p: row.id for row in found}
    assert len(routes) == partitions, "every partition has a route"
    return tuple(routes[p] for p in range(partitions))


def _kept(into: list, item: Any) -> Any:
    into.append(item)
    return item


Opened = list[tuple[int, int, int, pa.Table]]


def _opened(frame: DataFrame) -> Opened:
    """The parcels of `frame`, collected and opened on the driver."""
    parcels = frame.toArrow()
    blobs = parcels.column("blob")
    return [
        (k, s, p, P.opened(blobs[i].as_buffer()))
        for i, (k, s, p) in enumerate(
            zip(
                parcels.column("kind").to_pylist(),
                parcels.column("slot").to_pylist(),
                parcels.column("part").to_pylist(),
                strict=True,
            )
        )
    ]


def _all(opened: Opened, kind: int, part: int | None = None) -> list[pa.Table]:
    return [t for k, _, p, t in opened if k == kind and (part is None or p == part)]


def _table(opened: Opened, kind: int, schema: pa.Schema) -> pa.Table:
    return P.concatenated(_all(opened, kind), schema)


def _in_unit_order(opened: Opened, kind: int, schema: pa.Schema) -> pa.Table:
    """The parcels of `kind` (one unit's rows each, in order) joined in unit order: so in
    batch order, without a sort."""
    return P.concatenated(P.in_first_order(_all(opened, kind), "unit"), schema)


def _fingerprints(
    spark: SparkSession,
    ledger: StreamingLedger,
    screened: DataFrame,
    admitted: Admitted,
    offsets: np.ndarray,
    broadcasts: list[Any],
) -> pa.Table:
    """The fingerprints of the events a duplicate is compared with (none: no job)."""
    wanted = admitted.compared
    if not len(wanted):
        return FINGERPRINTS_SCHEMA.empty_table()
    shared = _kept(broadcasts, spark.sparkContext.broadcast(wanted))
    task = tasks.fingerprint_task(ledger, shared, offsets)
    found = _opened(screened.where(F.col("kind") == P.EVENTS).mapInArrow(task, P.PARCEL_DDL))
    return _table(found, P.FINGERPRINTS, FINGERPRINTS_SCHEMA)


@dataclass(frozen=True)
class _Planned:
    """A plan as the driver holds it: its shape, and its routing as the plan task sealed it
    (`planning.sealed_routing`), forwarded to the route tasks as it is."""

    rounds: int
    slots: int
    defers: bool
    routing: bytes


def _plan(
    spark: SparkSession,
    admitted: Admitted,
    offsets: np.ndarray,
    bins: int,
    options: ExecutionOptions,
    forced: frozenset[int],
    broadcasts: list[Any],
) -> tuple[_Planned, Opened]:
    """The batch's plan, made by one task (`tasks.plan_task`) from the runnable events'
    access columns: the driver ships those columns and receives the plan's bytes; with the
    task's parcels (its profile among them)."""
    request = PlanRequest(
        admitted.runnable.select(list(PLAN_INPUT_COLUMNS)),
        offsets,
        bins,
        options.round_cost,
        forced,
        options.rounds,
    )
    shared = _kept(broadcasts, spark.sparkContext.broadcast(request))
    placeholder = spark.range(0, 1, 1, numPartitions=1)  # one task, whose input it ignores
    found = _opened(placeholder.mapInArrow(tasks.plan_task(shared), P.PARCEL_DDL))
    (planned,) = _all(found, P.PLAN)
    (shape,) = planned.select(["rounds", "slots", "defers"]).to_pylist()
    return _Planned(routing=planned.column("routing")[0].as_py(), **shape), found


def _execute(
    spark: SparkSession,
    ledger: StreamingLedger,
    events: DataFrame,
    planned: _Planned,
    chunk: int,
    routes: tuple[int, ...],
    source: StateRows,
    frames: list[DataFrame],
    broadcasts: list[Any],
    clock: Stopwatch,
    journal: int | None,
    after_round: Callable[[int], None] | None,
) -> tuple[Opened, list[str], Opened]:
    """Route, run every round and settle (where the plan defers some row); the opened
    parcels of the rounds (and the round each came from) and of settling. With `journal` (a
    batch id) the tasks encode the journal, and the rounds' changes and results stay in it."""
    bins = len(routes)
    rounds = planned.rounds
    shared = _kept(broadcasts, spark.sparkContext.broadcast(planned.routing))
    clock.lap("ship plan")
    routed = _kept(
        frames, events.mapInArrow(tasks.route_task(shared, routes), P.PARCEL_DDL).persist()
    )
    handed: DataFrame | None = None
    pending: DataFrame | None = None
    collected: Opened = []
    stages: list[str] = []
    kept_back = [P.ROWS, P.PENDING] + ([P.CHANGES, P.RESULTS] if journal is not None else [])
    for round_ in range(rounds):
        lo, hi = round_ * bins, (round_ + 1) * bins
        work = routed.where((F.col("slot") >= lo) & (F.col("slot") < hi))
        if handed is not None:
            work = work.unionByName(handed.where((F.col("slot") >= lo) & (F.col("slot") < hi)))
        task = tasks.execute_task(ledger, source, round_, routes, journal, chunk)
        output = _kept(
            frames, work.repartition(bins, "route").mapInArrow(task, P.PARCEL_DDL).persist()
        )
        opened = _opened(output.where(~F.col("kind").isin(*kept_back)))
        collected.extend(opened)
        stages.extend([f"round{round_}"] * len(opened))
        rows = output.where(F.col("kind") == P.ROWS)
        handed = rows if handed is None else handed.unionByName(rows)
        adds = output.where(F.col("kind") == P.PENDING)
        pending = adds if pending is None else pending.unionByName(adds)
        clock.lap("route and round 0" if round_ == 0 else f"round {round_}")
        if after_round is not None:
            after_round(round_)
    routing_profile = _opened(routed.where(F.col("kind") == P.PROFILE))
    collected.extend(routing_profile)
    stages.extend(["route"] * len(routing_profile))
    settled: Opened = []
    if planned.defers and pending is not None:
        task = tasks.settle_task(ledger, source, journal)
        settled = _opened(pending.repartition(bins, "route").mapInArrow(task, P.PARCEL_DDL))
    clock.lap("settle")
    return collected, stages, settled


def _row_ids(ledger: StreamingLedger, overflowed: pa.Table) -> frozenset[int]:
    """The row ids of the rows that overflowed (few: one per wrong guess)."""
    tables = list(ledger.tables.values())
    found = set()
    for index, key in zip(
        overflowed.column("table").to_pylist(), overflowed.column("key").to_pylist(), strict=True
    ):
        table = tables[index]
        found.add(row_id(index, int(key) if table.key_type is int else key))
    return frozenset(found)


def _applied(applied: pa.Table, admitted: Admitted) -> pa.Table:
    """The applied transactions' (position, request_id): the slots name them by position."""
    position = applied.column("position").to_numpy()
    runnable = admitted.runnable.column("position").to_numpy()
    found = np.searchsorted(runnable, position)
    assert np.all(found < len(runnable)), "every applied position is a runnable one"
    assert np.array_equal(runnable[found], position), "every applied position is a runnable one"
    return pa.table(
        {
            "position": applied.column("position"),
            "request_id": admitted.runnable.column("request_id").take(pa.array(found)),
        }
    )


def _verdicts(ran: _Ran, executed: pa.Table) -> tuple[pa.Table, pa.Table]:
    """The batch's rejections (`REJECTIONS_SCHEMA`) and duplicates, by position, given the
    outcomes of the events that ran (`executed`, the slots' OUTCOMES)."""
    offsets, admitted = ran.offsets, ran.admitted
    duplicates = admitted.duplicate_verdicts(ran.fingerprints)
    ended = _table(ran.collected, P.ENDED, ENDED_SCHEMA)
    ended = ended.append_column("position", pa.array(positions_of(ended, offsets), pa.int64()))
    ended = ended.filter(
        pc.invert(pc.is_in(ended.column("position"), duplicates.column("position")))
    )
    failed = executed.filter(pc.is_valid(executed.column("reason")))
    rejections = pa.concat_tables(
        [
            ended.select(REJECTIONS_SCHEMA.names).cast(REJECTIONS_SCHEMA),
            pa.table(
                {
                    **{
                        n: failed.column(n)
                        for n in ("position", "stream", "request_id", "reason", "detail")
                    },
                    "source_file": pa.nulls(len(failed), pa.string()),
                    "line_number": pa.nulls(len(failed), pa.int32()),
                    "raw": pa.nulls(len(failed), pa.binary()),
                },
                schema=REJECTIONS_SCHEMA,
            ),
        ]
    ).sort_by("position")
    return rejections, duplicates.sort_by("position")


def _result(ledger: StreamingLedger, ran: _Ran) -> ColumnarRunResult:
    outputs, settled = ran.outputs, ran.settled
    executed = _table(outputs, P.OUTCOMES, EXECUTED_SCHEMA)
    rejections, duplicates = _verdicts(ran, executed)
    applied = _applied(executed.filter(pc.is_null(executed.column("reason"))), ran.admitted)
    outcomes = outcomes_table(int(ran.offsets[-1]), applied, rejections, duplicates)
    tables = list(ledger.tables.values())
    settled_changes = _table(settled, P.SETTLED, SETTLED_SCHEMA)
    changes: dict[str, pa.Table] = {}
    for index, table in enumerate(tables):
        schema = changes_schema(table)
        parts = _all(outputs, P.CHANGES, index)
        mine = settled_changes.filter(pc.equal(settled_changes.column("table"), index))
        if len(mine):
            assert table.value_type is int, "only int rows are added to"
            parts.append(
                pa.table(
                    {
                        "position": mine.column("position"),
                        "seq": mine.column("seq"),
                        "key": mine.column("key").cast(key_type(table)),
                        "before": mine.column("before"),
                        "after": mine.column("after"),
                    },
                    schema=schema,
                )
            )
        changes[table.name] = P.concatenated(parts, schema)
    results = _table(outputs, P.RESULTS, RESULTS_SCHEMA)
    return ColumnarRunResult(outcomes, rejections, duplicates, changes, results)
