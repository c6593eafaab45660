"""Executing a planned batch on Spark: bins to tasks, transactions in batch order.

For each round, the round's events are shuffled so that each bin lands in the task of the same
number, and sorted by position. The task (`execute_task`) runs
`ledger_engine.runtime.parallel.bins.execute_bin` over them chunk by chunk; before each chunk it
fetches the rows the chunk touches that it does not hold yet from the batch's `RowSource`
(PostgreSQL, one query per table per chunk, in every task at once; or a broadcast of an in-memory
state).

Rows written by an earlier round of the same batch are not in the row source. With
PostgreSQL, each round stages its writes and the source reads them on top of the tables. In
memory, they travel to the tasks that need them in the round's shuffle, ahead of the events
(records of kind ROW sort first).

A task emits `OUTPUT` records: the executed transactions (through the batch's `Sink`), each
pending add of a deferred row (settled later by `ledger_engine.runtime.spark.settling`), and,
when the next round needs them in memory, the net change of each row it wrote.
"""

from __future__ import annotations

import itertools
import pickle
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
from pyspark.broadcast import Broadcast
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ledger_engine.core.declarations import StreamingLedger, Table
from ledger_engine.core.records import Event
from ledger_engine.core.storable import key_text
from ledger_engine.core.transaction import PendingAdd
from ledger_engine.runtime.gc_pause import gc_paused
from ledger_engine.runtime.parallel.bins import (
    BinRows,
    Executed,
    NetChange,
    RowKey,
    Runnable,
    empty_rows,
    execute_bin,
    net_changes,
)
from ledger_engine.runtime.parallel.settle import PROBE
from ledger_engine.runtime.spark.codec import (
    NEED,
    NET,
    OUTPUT,
    PENDING,
    PICKLE,
    WORK,
    batch_of,
    event_of,
    key_of,
    spark_ddl,
    tables_by_index,
    value_columns,
    value_of,
)
from ledger_engine.runtime.spark.profile import TaskClock

ROW, EVENT = 0, 1  # `kind` of a work record: rows sort before events

Task = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


@dataclass(frozen=True)
class Placement:
    """The schedule as the tasks see it: positions of the runnable events (sorted) with their
    round, bin and deferred-bindings mask, and the route of each bin."""

    positions: np.ndarray
    round: np.ndarray
    bin: np.ndarray
    deferred_bindings: np.ndarray
    routes: tuple[int, ...]

    def locate(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which of `positions` are planned, and their index in the plan."""
        if len(self.positions) == 0:
            return np.zeros(len(positions), dtype=bool), np.zeros(0, dtype=np.int64)
        index = np.minimum(np.searchsorted(self.positions, positions), len(self.positions) - 1)
        planned = self.positions[index] == positions
        return planned, index[planned]


class RowSource(Protocol):
    """Where a task reads the rows it does not hold; picklable, used inside tasks."""

    def open(self) -> None:
        """Get ready to read (called at the start of every task, before the collector is
        paused: loading a broadcast turns Python's collector back on)."""
        ...

    def read(self, round_: int, table: Table, keys: Sequence[Any]) -> dict[Any, Any]:
        """The values of `keys` of `table` as of the start of `round_` (absent rows left
        out). Round 0 is the state before the batch."""
        ...

    def close(self) -> None:
        """Release what reading took (called at the end of every task)."""
        ...


@dataclass(frozen=True, slots=True)
class EventLine:
    """An executed event and where it came from (file, line, raw bytes; `None` in memory)."""

    event: Event
    source_file: str | None
    line_number: int | None
    raw: bytes | None
    fingerprint: str


class Sink(Protocol):
    """Where a task's executed transactions go: collected to the driver, or staged in the
    system of record. Its methods run inside Spark tasks; it must be picklable."""

    def executed(
        self, round_: int, items: list[Executed], lines: dict[int, EventLine]
    ) -> Iterable[pa.RecordBatch]:
        """Take a chunk of executed transactions (in batch order); return OUTPUT records."""
        ...

    def round_done(
        self, round_: int, nets: dict[RowKey, NetChange], read_later: bool
    ) -> Iterable[pa.RecordBatch]:
        """Take the net change of every row the task wrote in the round (empty unless
        `wants_nets`); `read_later`: a later round of the batch reads the rows this round
        wrote."""
        ...

    wants_nets: bool


# -- the round's events, routed to their bins --------------------------------------------------


def round_events(screened: DataFrame, placement: Broadcast, round_: int) -> DataFrame:
    """The planned events of `round_` as WORK records of kind EVENT, with bin, route and
    deferred-bindings mask."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        plan: Placement = placement.value
        routes = np.array(plan.routes, dtype=np.int64)
        for batch in batches:
            planned, index = plan.locate(batch.column("position").to_numpy())
            in_round = plan.round[index] == round_
            if not in_round.any():
                continue
            mine = planned.copy()
            mine[planned] = in_round
            batch = batch.filter(pa.array(mine))
            index = index[in_round]
            bins = plan.bin[index]
            yield batch_of(
                WORK,
                {
                    "kind": np.full(len(index), EVENT, dtype=np.int8),
                    "bin": bins,
                    "route": routes[bins],
                    "deferred": plan.deferred_bindings[index],
                    **{name: batch.column(name) for name in _EVENT_COLUMNS},
                },
            )

    planned = screened.where(F.col("runs")).select(*_EVENT_COLUMNS)
    return planned.mapInArrow(task, spark_ddl(WORK))


_EVENT_COLUMNS = ["position", "event", "source_file", "line_number", "raw", "fingerprint"]


def needs_task(placement: Broadcast) -> Task:
    """Every (round, bin, table, key) a runnable event touches; `deferred` marks rows whose
    adds are deferred."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        plan: Placement = placement.value
        for batch in batches:
            planned, index = plan.locate(batch.column("position").to_numpy())
            batch = batch.filter(pa.array(planned))
            lengths = pa.compute.list_value_length(batch.column("acc_row")).to_numpy(
                zero_copy_only=False
            )
            masks = np.repeat(plan.deferred_bindings[index], lengths)
            first = np.repeat(np.cumsum(lengths) - lengths, lengths)
            binding = np.arange(len(masks)) - first
            yield batch_of(
                NEED,
                {
                    "round": np.repeat(plan.round[index], lengths),
                    "bin": np.repeat(plan.bin[index], lengths),
                    "table": batch.column("acc_table").flatten(),
                    "key": batch.column("acc_key").flatten(),
                    "deferred": (masks >> binding) & 1 == 1,
                },
            )

    return task


def carried_rows(
    needs: DataFrame, written: DataFrame, placement: Broadcast, round_: int
) -> DataFrame:
    """WORK records of kind ROW: the rows earlier rounds wrote (`written`: table, key, round,
    value columns) that `round_`'s bins need, at their latest value."""
    latest = written.groupBy("table", "key").agg(
        F.max_by(F.struct("value_int", "value_str", "value_obj"), "round").alias("v")
    )
    wanted = (
        needs.where((F.col("round") == round_) & ~F.col("deferred"))
        .select("bin", "table", "key")
        .distinct()
    )
    routes = placement.value.routes
    route = F.element_at(F.array(*[F.lit(r) for r in routes]), F.col("bin") + 1)
    return wanted.join(latest, ["table", "key"]).select(
        F.lit(ROW).cast("tinyint").alias("kind"),
        "bin",
        route.alias("route"),
        F.lit(0).cast("bigint").alias("deferred"),
        F.lit(-1).cast("bigint").alias("position"),
        "table",
        "key",
        "v.value_int",
        "v.value_str",
        "v.value_obj",
    )


def bin_order(work: DataFrame, bins: int) -> DataFrame:
    """`work` with each bin in the task of the same number, rows first, then events by
    position."""
    return work.repartition(bins, "route").sortWithinPartitions("kind", "position")


# -- the task ----------------------------------------------------------------------------------


def execute_task(
    ledger: StreamingLedger,
    source: RowSource,
    sink: Sink,
    round_: int,
    read_later: bool,
    emit_nets: bool,
) -> Task:
    """The task of one bin (or several, merged in batch order) of one round.

    Records arrive rows first, then events by position; events are executed chunk by chunk
    as they arrive, so a task holds its rows but never all its events. `read_later`: a later
    round of the batch reads this round's writes; `emit_nets`: they travel to it as NET
    records (an in-memory row source, which does not see the sink's writes).
    """
    assert read_later or not emit_nets, "only a round that a later one reads emits its nets"
    tables = tables_by_index(ledger)
    streams = ledger.streams

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        source.open()
        try:
            with gc_paused():
                yield from _execute(batches)
        finally:
            source.close()

    def _execute(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        clock = TaskClock(f"round {round_}")
        rows = empty_rows(ledger)
        nets: dict[RowKey, NetChange] = {}
        keep_nets = emit_nets or sink.wants_nets
        last = -1
        for batch in batches:
            clock.lap("input")
            columns = batch.to_pydict()
            runnables: list[Runnable] = []
            lines: dict[int, EventLine] = {}
            for i, kind in enumerate(columns["kind"]):
                if kind == ROW:
                    assert last == -1, "rows come before events"
                    table = tables[columns["table"][i]]
                    key = key_of(table, columns["key"][i])
                    rows[table.name][key] = value_of(
                        table,
                        columns["value_int"][i],
                        columns["value_str"][i],
                        columns["value_obj"][i],
                    )
                    continue
                position = columns["position"][i]
                assert position > last, "events come in batch order"
                last = position
                event, keys = event_of(columns["event"][i])
                assert keys is not None, "a runnable event carries its keys"
                stream = streams[event.stream]
                runnables.append(Runnable(position, event, stream, keys, columns["deferred"][i]))
                lines[position] = EventLine(
                    event,
                    columns["source_file"][i],
                    columns["line_number"][i],
                    columns["raw"][i],
                    columns["fingerprint"][i],
                )
            clock.lap("decode")
            if not runnables:
                continue
            clock.items += len(runnables)
            _fetch(source, round_, rows, runnables)
            clock.lap("read rows")
            executed = list(execute_bin(rows, runnables))
            clock.lap("execute")
            outputs = [*sink.executed(round_, executed, lines), *_pending_records(ledger, executed)]
            if keep_nets:
                for row, change in net_changes(executed).items():
                    if row in nets:
                        nets[row].after = change.after
                    else:
                        nets[row] = change
            clock.lap("sink")
            yield from outputs
        clock.lap("input")
        outputs = list(sink.round_done(round_, nets, read_later))
        if emit_nets:
            outputs.extend(_net_records(ledger, nets))
        clock.lap("sink")
        yield from outputs
        yield clock.record()

    return task


def _fetch(source: RowSource, round_: int, rows: BinRows, runnables: list[Runnable]) -> None:
    """Read the rows `runnables` touch that `rows` lacks (absent rows become `None`)."""
    missing: dict[str, tuple[Table, set[Any]]] = {}
    for runnable in runnables:
        bindings = zip(runnable.stream.bindings, runnable.keys, strict=True)
        for i, (binding, key) in enumerate(bindings):
            table = binding.table
            if key in rows[table.name] or runnable.deferred >> i & 1:
                continue
            missing.setdefault(table.name, (table, set()))[1].add(key)
    for name, (table, keys) in missing.items():
        found = source.read(round_, table, list(keys))
        delivered = rows[name]
        for key in keys:
            delivered[key] = found.get(key)


def _pending_records(ledger: StreamingLedger, executed: list[Executed]) -> Iterator[pa.RecordBatch]:
    index = {name: i for i, name in enumerate(ledger.tables)}
    columns: dict[str, list] = {n: [] for n in ("tag", "table", "key", "position", "seq", "blob")}
    for item in executed:
        changes = enumerate(getattr(item.outcome, "changes", ()))
        probes = ((PROBE, probe) for probe in item.probes)
        for seq, change in itertools.chain(changes, probes):
            if isinstance(change, PendingAdd):
                columns["tag"].append(PENDING)
                columns["table"].append(index[change.table])
                columns["key"].append(key_text(change.key))
                columns["position"].append(item.position)
                columns["seq"].append(seq)
                fields = (change.request_id, change.delta, change.low, change.high)
                columns["blob"].append(pickle.dumps(fields, PICKLE))
    if columns["tag"]:
        yield batch_of(OUTPUT, columns)


def _net_records(
    ledger: StreamingLedger, nets: dict[RowKey, NetChange]
) -> Iterator[pa.RecordBatch]:
    tables = ledger.tables
    index = {name: i for i, name in enumerate(tables)}
    columns: dict[str, list] = {
        n: [] for n in ("tag", "table", "key", "value_int", "value_str", "value_obj")
    }
    for (table_name, key), net in nets.items():
        value_int, value_str, value_obj = value_columns(tables[table_name], net.after)
        columns["tag"].append(NET)
        columns["table"].append(index[table_name])
        columns["key"].append(key_text(key))
        columns["value_int"].append(value_int)
        columns["value_str"].append(value_str)
        columns["value_obj"].append(value_obj)
    if columns["tag"]:
        yield batch_of(OUTPUT, columns)


def output_ddl() -> str:
    return spark_ddl(OUTPUT)


def routes_for(spark: SparkSession, partitions: int) -> tuple[int, ...]:
    """For each partition number `p`, a value whose hash sends a record to partition `p` when
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
