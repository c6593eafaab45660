"""`run_spark`: the ledger executed in parallel on Spark, equal to `run_serial`.

The events, the initial state and the known request ids are given in memory, and the
`RunResult` is returned in memory: so the events are shipped to Spark in pickled chunks and
the outcomes come back the same way. Everything in between (admission, planning, execution in
bins, settling) is the batch machinery of `ledger_engine.runtime.spark.batch`, which the micro-batch
pipeline runs with PostgreSQL as source and sink instead.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.broadcast import Broadcast
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from ledger_engine.core.declarations import StreamingLedger, Table
from ledger_engine.core.records import (
    DUPLICATE,
    REJECTED,
    Change,
    Duplicate,
    Event,
    Rejection,
    RunResult,
    record,
)
from ledger_engine.runtime import Runner
from ledger_engine.runtime.gc_pause import gc_paused
from ledger_engine.runtime.parallel.assemble import assemble, pack
from ledger_engine.runtime.parallel.bins import Executed, NetChange, RowKey
from ledger_engine.runtime.parallel.probe import probe
from ledger_engine.runtime.parallel.settle import Settled
from ledger_engine.runtime.serial import initial_state, run_serial
from ledger_engine.runtime.spark.admission import screen_chunks_task
from ledger_engine.runtime.spark.batch import BatchExecutor, BatchRun, ExecutionOptions
from ledger_engine.runtime.spark.codec import (
    OUTCOMES,
    OUTPUT,
    PICKLE,
    SCREENED,
    SETTLED,
    batch_of,
    event_chunks,
    spark_ddl,
)
from ledger_engine.runtime.spark.execution import EventLine

CHUNK = 5_000  # events per pickled chunk shipped from the driver


class CollectSink:
    """Sends outcomes back to the driver as pickles of packed tuples
    (`ledger_engine.runtime.parallel.assemble`); a settling task sends all its changes at its
    end."""

    wants_nets = False

    def __init__(self) -> None:
        self._settled: list[tuple] = []

    def __getstate__(self) -> dict[str, Any]:
        return {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__()  # type: ignore[misc]

    def executed(
        self, round_: int, items: list[Executed], lines: dict[int, EventLine]
    ) -> Iterator[pa.RecordBatch]:
        blob = pickle.dumps([pack(item) for item in items], PICKLE)
        yield batch_of(OUTPUT, {"tag": [OUTCOMES], "blob": [blob]})

    def round_done(
        self, round_: int, nets: dict[RowKey, NetChange], read_later: bool
    ) -> Iterator[pa.RecordBatch]:
        return iter(())

    def settled(
        self, items: list[Settled], nets: dict[RowKey, NetChange]
    ) -> Iterator[pa.RecordBatch]:
        self._settled.extend(
            (
                s.position,
                s.seq,
                s.change.request_id,
                s.change.table,
                s.change.key,
                s.change.before,
                s.change.after,
            )
            for s in items
        )
        return iter(())

    def settle_done(self) -> Iterator[pa.RecordBatch]:
        if self._settled:
            blob = pickle.dumps(self._settled, PICKLE)
            self._settled = []
            yield batch_of(OUTPUT, {"tag": [SETTLED], "blob": [blob]})


@dataclass(frozen=True)
class MemoryRows:
    """Rows read from an in-memory state broadcast to the workers (loaded once per worker)."""

    state: Broadcast

    def open(self) -> None:
        self.state.value  # noqa: B018 - loads the broadcast once per worker

    def read(self, round_: int, table: Table, keys: Sequence[Any]) -> dict[Any, Any]:
        rows = self.state.value[table.name]
        return {key: rows[key] for key in keys if key in rows}

    def close(self) -> None:
        pass


class MemorySources:
    """The initial state and known request ids of a `run_spark` call."""

    carries_writes = True

    def __init__(
        self,
        spark: SparkSession,
        state: Mapping[str, Mapping[Any, Any]],
        known: Mapping[str, str],
    ) -> None:
        self.state = spark.sparkContext.broadcast(dict(state))
        self.known_requests = known

    def known(self, request_ids: list[str]) -> Mapping[str, str]:
        known = self.known_requests
        return {rid: known[rid] for rid in request_ids if rid in known}

    def rows(self) -> MemoryRows:
        return MemoryRows(self.state)

    def release(self) -> None:
        self.state.destroy()


@dataclass
class SparkRunProfile:
    """Where a `run_spark` call spent its time: `path` ("spark", or "serial fallback" for a
    batch that cannot be spread), the driver's seconds by phase (shipping the events in,
    the batch machinery's own phases, collecting and assembling the result), the Spark
    tasks' profile (`spark.profile.task_profile`) and the rounds the batch ran in."""

    path: str = "spark"
    events: int = 0
    rounds: int = 0
    driver_seconds: dict[str, float] = field(default_factory=dict)
    tasks: dict[str, Any] = field(default_factory=dict)

    @property
    def driver_seconds_per_event(self) -> dict[str, float]:
        """The driver's fixed cost per event, by phase (microseconds)."""
        count = max(self.events, 1)
        return {phase: s * 1e6 / count for phase, s in self.driver_seconds.items()}


def run_spark(
    spark: SparkSession,
    ledger: StreamingLedger,
    events: Iterable[Event],
    state: Mapping[str, Mapping[Any, Any]] | None = None,
    known_requests: Mapping[str, str] | None = None,
    options: ExecutionOptions | None = None,
) -> RunResult:
    """Execute `events` in parallel on Spark; the result equals `run_serial`'s on the same
    input (see `ledger_engine.runtime.spark.batch` for how). A batch that cannot be spread over bins
    (one conflict component) runs with the serial runner in this process instead
    (`ledger_engine.runtime.parallel.probe`), unless `options` turn that off."""
    return run_spark_profiled(spark, ledger, events, state, known_requests, options)[0]


def spark_runner(spark: SparkSession, options: ExecutionOptions | None = None) -> Runner:
    """`run_spark` on `spark` with `options`, as a `Runner`."""

    def run(
        ledger: StreamingLedger,
        events: Iterable[Event],
        state: Mapping[str, Mapping[Any, Any]] | None = None,
        known_requests: Mapping[str, str] | None = None,
    ) -> RunResult:
        return run_spark(spark, ledger, events, state, known_requests, options)

    return run


def run_spark_profiled(
    spark: SparkSession,
    ledger: StreamingLedger,
    events: Iterable[Event],
    state: Mapping[str, Mapping[Any, Any]] | None = None,
    known_requests: Mapping[str, str] | None = None,
    options: ExecutionOptions | None = None,
) -> tuple[RunResult, SparkRunProfile]:
    """`run_spark`, and where its time went."""
    ledger.check()
    batch = list(events)
    options = options or ExecutionOptions()
    profile = SparkRunProfile(events=len(batch))
    phases = profile.driver_seconds
    clock = time.perf_counter()

    def lap(phase: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        phases[phase] = phases.get(phase, 0.0) + now - clock
        clock = now

    executor = BatchExecutor(spark, ledger, options)
    if options.serial_fallback and options.rounds is None:
        known = known_requests or {}
        spreads = probe(ledger, batch, executor.bins, options.round_cost, known).spreads
        lap("probe")
        if not spreads:
            profile.path = "serial fallback"
            result = run_serial(ledger, batch, state, known)
            lap("serial runner")
            return result, profile
    start = initial_state(ledger, state)
    lap("initial state")
    starts, blobs = zip(*event_chunks(batch, CHUNK), strict=True) if batch else ((), ())
    chunks = pa.table(
        {"start": pa.array(starts, pa.int64()), "chunk": pa.array(blobs, pa.binary())}
    )
    screened = (
        spark.createDataFrame(chunks)
        .repartition(executor.bins)
        .mapInArrow(screen_chunks_task(ledger), spark_ddl(SCREENED))
    )
    sources = MemorySources(spark, start, known_requests or {})
    lap("ship events and state")
    try:
        run = executor.execute(screened, sources, CollectSink())
        profile.rounds = run.schedule.rounds
        profile.tasks = run.profile
        for phase, seconds in run.seconds.items():
            if phase != "execute":  # the sum of the rounds and settling, shown one by one
                phases[phase] = seconds
        clock = time.perf_counter()
        try:
            result = _collect(batch, start, run, lap)
            return result, profile
        finally:
            run.release()
    finally:
        sources.release()


def _collect(
    batch: Sequence[Event], start: Any, run: BatchRun, lap: Callable[[str], None]
) -> RunResult:
    verdicts: list[Rejection | Duplicate | None] = [None] * len(batch)
    ended = (
        run.ended("reason", "detail")
        .select("position", "status", "reason", "detail", "duplicate_kind")
        .toArrow()
        .to_pydict()
    )
    packed: dict[int, tuple] = {}
    settled: dict[tuple[int, int], Change] = {}
    outcome_blobs = [
        output.where(F.col("tag") == OUTCOMES).select("blob").toArrow()["blob"].to_pylist()
        for output in run.outputs
    ]
    settled_blobs = (
        run.settled.where(F.col("tag") == SETTLED).select("blob").toArrow()["blob"].to_pylist()
    )
    lap("collect outcomes")
    with gc_paused():
        for position, status, reason, detail, kind in zip(*ended.values(), strict=True):
            event = batch[position]
            if status == REJECTED:
                verdicts[position] = Rejection(event.stream, event.request_id, reason, detail)
            else:
                assert status == DUPLICATE
                verdicts[position] = Duplicate(event.stream, event.request_id, kind)
        for blobs in outcome_blobs:
            for blob in blobs:
                packed.update((item[0], item) for item in pickle.loads(blob))
        for blob in settled_blobs:
            for position, seq, rid, table, key, before, after in pickle.loads(blob):
                settled[(position, seq)] = record(Change, (rid, table, key, before, after))
        lap("unpickle outcomes")
        result = assemble(batch, start, verdicts, packed, settled)
        lap("assemble result")
        return result
