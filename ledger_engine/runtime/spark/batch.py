"""One batch on Spark: admit, plan, execute round by round, settle deferred adds.

`BatchExecutor.execute` takes a batch's screened events (a DataFrame: where the events come
from does not matter here) and runs it to the end; its `Sources` say where the rows' values
and the request ids of earlier batches come from, its `Sink` where the outcomes go. The driver
handles only compact columns: it collects each event's position, request id, fingerprint and
row ids (17 bytes per access) to admit it (`spark.admission.admit`) and plan the batch
(`ledger_engine.runtime.parallel.plan`), broadcasts the plan (16 bytes per event), and reads back
overflow reports. Events, rows and outcomes move between Spark tasks by shuffles.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.runtime.parallel.plan import Accesses, Schedule, plan, row_id
from ledger_engine.runtime.spark.admission import ADMISSION_COLUMNS, VERDICTS, admit
from ledger_engine.runtime.spark.codec import (
    NEED,
    NET,
    OVERFLOW,
    PROFILE,
    key_of,
    spark_ddl,
    tables_by_index,
)
from ledger_engine.runtime.spark.execution import (
    Placement,
    RowSource,
    Sink,
    bin_order,
    carried_rows,
    execute_task,
    needs_task,
    output_ddl,
    round_events,
    routes_for,
)
from ledger_engine.runtime.spark.profile import task_profile
from ledger_engine.runtime.spark.settling import SettledSink, pending_by_row, settle_task
from ledger_engine.runtime.spark.shipping import ship_application


class Sources(Protocol):
    """Where a batch's inputs besides its events come from."""

    # True: rows written by an earlier round must travel to later rounds in the shuffle
    # (an in-memory state); False: the row source sees them itself (staged in PostgreSQL).
    carries_writes: bool

    def known(self, request_ids: list[str]) -> Mapping[str, str]:
        """The fingerprints of those of `request_ids` that earlier batches executed."""
        ...

    def rows(self) -> RowSource:
        """The source tasks read rows from."""
        ...


class BatchSink(Sink, SettledSink, Protocol):
    """Takes executed transactions and settled adds (see `Sink`, `SettledSink`)."""


@dataclass(frozen=True)
class ExecutionOptions:
    """How a batch is spread over Spark tasks.

    `bins`: tasks per round (default: the session's default parallelism). `round_cost`: what
    a round's fixed cost (a Spark job) is worth in executed transactions, for choosing the
    number of rounds. `rounds`: a fixed number of rounds instead.
    """

    bins: int | None = None
    round_cost: int = 20_000
    rounds: int | None = None


@dataclass
class BatchRun:
    """A batch that ran: its DataFrames (persisted) and what the driver learnt."""

    screened: DataFrame  # every event, screened (`codec.SCREENED`)
    verdicts: DataFrame  # (position, status, duplicate_kind) of the events admission ended
    outputs: list[DataFrame]
    settled: DataFrame
    schedule: Schedule
    runnable: int
    replans: int
    seconds: dict[str, float] = field(default_factory=dict)
    profile: dict[str, dict[str, Any]] = field(default_factory=dict)

    def release(self) -> None:
        for frame in (self.screened, self.verdicts, *self.outputs, self.settled):
            frame.unpersist()

    def ended(self, *columns: str) -> DataFrame:
        """The events admission ended (rejected or duplicates): their `status`,
        `duplicate_kind` and the given columns of the screened event."""
        return self.verdicts.join(self.screened.select("position", *columns), "position")


class BatchExecutor:
    """Runs batches of one ledger on one Spark session."""

    def __init__(
        self, spark: SparkSession, ledger: StreamingLedger, options: ExecutionOptions
    ) -> None:
        ledger.check()
        ship_application(spark, ledger)  # so that the executors can import its functions
        self.spark = spark
        self.ledger = ledger
        self.options = options
        self.bins = options.bins or spark.sparkContext.defaultParallelism
        self._routes: tuple[int, ...] | None = None
        self.profile: dict[str, dict[str, Any]] = {}

    @property
    def routes(self) -> tuple[int, ...]:
        if self._routes is None:
            self._routes = routes_for(self.spark, self.bins)
        return self._routes

    def execute(
        self,
        screened: DataFrame,
        sources: Sources,
        sink: BatchSink,
        on_replan: Callable[[], None] | None = None,
        after_round: Callable[[int], None] | None = None,
    ) -> BatchRun:
        """Run a batch of screened events (schema `codec.SCREENED`) to the end.

        `on_replan` is called before a batch is executed again because a deferred add
        overflowed (a sink with side effects discards what it staged); `after_round(r)` once
        round `r` has run.
        """
        seconds: dict[str, float] = {}
        clock = time.perf_counter()
        screened = screened.persist()
        # One job screens the batch and brings the driver what admission and planning read.
        collected = screened.select(*ADMISSION_COLUMNS).toArrow()
        seconds["screen"] = time.perf_counter() - clock
        clock = time.perf_counter()
        runnable, ended = admit(collected, sources.known)
        decided = self.spark.createDataFrame(ended, spark_ddl(VERDICTS)).persist()
        positions, accesses = _accesses(runnable)
        seconds["admit"] = time.perf_counter() - clock

        forced: frozenset[int] = frozenset()
        replans = 0
        while True:
            clock = time.perf_counter()
            schedule = plan(
                accesses, self.bins, self.options.round_cost, forced, self.options.rounds
            )
            seconds["plan"] = seconds.get("plan", 0.0) + time.perf_counter() - clock
            clock = time.perf_counter()
            outputs, settled = self._run(
                screened, positions, schedule, sources, sink, seconds, after_round
            )
            overflowed = settled.where(F.col("tag") == OVERFLOW).select("table", "key").collect()
            seconds["execute"] = seconds.get("execute", 0.0) + time.perf_counter() - clock
            if not overflowed:
                break
            tables = tables_by_index(self.ledger)
            forced |= {row_id(r.table, key_of(tables[r.table], r.key)) for r in overflowed}
            for frame in (*outputs, settled):
                frame.unpersist()
            replans += 1
            if on_replan is not None:
                on_replan()
        return BatchRun(
            screened,
            decided,
            outputs,
            settled,
            schedule,
            len(positions),
            replans,
            seconds,
            self.profile,
        )

    def _run(
        self,
        screened: DataFrame,
        positions: np.ndarray,
        schedule: Schedule,
        sources: Sources,
        sink: BatchSink,
        seconds: dict[str, float],
        after_round: Callable[[int], None] | None,
    ) -> tuple[list[DataFrame], DataFrame]:
        placement = self.spark.sparkContext.broadcast(
            Placement(
                positions,
                schedule.round,
                schedule.bin,
                schedule.deferred_bindings,
                self.routes,
            )
        )
        source = sources.rows()
        carry = sources.carries_writes and schedule.rounds > 1
        needs = written = None
        if carry:
            needs = (
                screened.where(F.col("runs"))
                .select("position", "acc_table", "acc_key", "acc_row")
                .mapInArrow(needs_task(placement), spark_ddl(NEED))
                .persist()
            )
        outputs: list[DataFrame] = []
        profiles: list[bytes] = []
        for round_ in range(schedule.rounds):
            clock = time.perf_counter()
            work = round_events(screened, placement, round_)
            if needs is not None and written is not None:
                work = work.unionByName(
                    carried_rows(needs, written, placement, round_), allowMissingColumns=True
                )
            read_later = round_ < schedule.rounds - 1
            emit_nets = carry and read_later
            task = execute_task(self.ledger, source, sink, round_, read_later, emit_nets)
            output = bin_order(work, self.bins).mapInArrow(task, output_ddl()).persist()
            output.count()  # run the round now: the next one starts from its writes
            outputs.append(output)
            profiles.extend(_profiles(output))
            if emit_nets:
                writes = output.where(F.col("tag") == NET).select(
                    "table",
                    "key",
                    F.lit(round_).alias("round"),
                    "value_int",
                    "value_str",
                    "value_obj",
                )
                written = writes if written is None else written.unionByName(writes)
            seconds[f"round {round_}"] = time.perf_counter() - clock
            if after_round is not None:
                after_round(round_)
        clock = time.perf_counter()
        if schedule.deferred:
            pending = outputs[0]
            for output in outputs[1:]:
                pending = pending.unionByName(output)
            settled = (
                pending_by_row(pending, self.bins)
                .mapInArrow(settle_task(self.ledger, source, sink), output_ddl())
                .persist()
            )
            settled.count()
            profiles.extend(_profiles(settled))
        else:  # nothing was deferred: nothing to settle
            settled = self.spark.createDataFrame([], output_ddl())
        seconds["settle"] = time.perf_counter() - clock
        self.profile = task_profile(profiles)
        if needs is not None:
            needs.unpersist()
        return outputs, settled


def _accesses(runnable: pa.Table) -> tuple[np.ndarray, Accesses]:
    """The runnable events' positions (in batch order) and their accesses."""
    positions = runnable.column("position").to_numpy().astype(np.int64)
    assert np.all(positions[1:] > positions[:-1]), "runnable events in batch order, once each"
    rows = runnable.column("acc_row").combine_chunks()
    lengths = pa.compute.list_value_length(rows).to_numpy(zero_copy_only=False)
    txn = np.repeat(np.arange(len(positions), dtype=np.int64), lengths)
    flags = runnable.column("acc_flags").combine_chunks().flatten()
    return positions, Accesses(
        len(positions),
        txn,
        rows.flatten().to_numpy(zero_copy_only=False).astype(np.int64),
        flags.to_numpy(zero_copy_only=False).astype(np.uint8),
    )


def _profiles(output: DataFrame) -> list[bytes]:
    return [row.blob for row in output.where(F.col("tag") == PROFILE).select("blob").collect()]
