"""Executing a planned batch on Spark: rows to their bins, bins to tasks, transactions in order.

For each round, the round's events and the rows they need (their values as of the start of
the round) are unioned into one DataFrame, shuffled so that each bin lands in a task of its
own, and sorted rows first, then events by position. The task (`execute_task`) loads the rows
and runs `ledger_engine.partition.execute_bin` over the events. It emits, as `OUTPUT` records:
the executed transactions (through the batch's `Sink`), each pending add of a deferred row
(settled later, in batch order, by `ledger_engine.spark.settling`), and the net change of each
row the bin wrote (which becomes the next round's starting values).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
from pyspark.broadcast import Broadcast
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ledger_engine.api import StreamingLedger
from ledger_engine.model import Event
from ledger_engine.partition import (
    Executed,
    NetChange,
    RowKey,
    Runnable,
    deferred_test,
    execute_bin,
    net_changes,
)
from ledger_engine.schedule import Schedule
from ledger_engine.spark.codec import (
    NEED,
    NET,
    OUTPUT,
    PENDING,
    PICKLE,
    batch_of,
    event_of,
    key_of,
    key_text,
    spark_ddl,
    tables_by_index,
    value_columns,
    value_of,
)
from ledger_engine.transaction import PendingAdd, resolve_keys

ROW, EVENT = 0, 1  # `kind` of a work record: rows sort before events


@dataclass(frozen=True)
class Placement:
    """The schedule as the tasks see it: positions (sorted) with their round and bin, and the
    deferred row ids (sorted)."""

    positions: np.ndarray
    round: np.ndarray
    bin: np.ndarray
    deferred: frozenset[int]

    def locate(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        index = np.searchsorted(self.positions, positions)
        assert np.array_equal(self.positions[index], positions), "an event was not planned"
        return self.round[index], self.bin[index]


class Sink(Protocol):
    """Where a task's executed transactions go: collected to the driver, or staged in the
    system of record. Its methods run inside Spark tasks; it must be picklable."""

    def executed(
        self, round_: int, items: list[Executed], lines: dict[int, EventLine]
    ) -> Iterable[pa.RecordBatch]:
        """Take a chunk of executed transactions (in batch order); return OUTPUT records."""
        ...

    def round_done(self, round_: int, nets: dict[RowKey, NetChange]) -> Iterable[pa.RecordBatch]:
        """Take the net change of every row the task wrote in the round."""
        ...


@dataclass(frozen=True, slots=True)
class EventLine:
    """An executed event and where it came from (file, line, raw bytes; `None` in memory)."""

    event: Event
    source_file: str | None
    line_number: int | None
    raw: bytes | None
    fingerprint: str


def placement_of(positions: np.ndarray, schedule: Schedule) -> Placement:
    return Placement(positions, schedule.round, schedule.bin, schedule.deferred)


def needs_task(
    placement: Broadcast,
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Every (round, bin, table, key) a runnable event touches; `deferred` marks rows whose
    adds are deferred (they need a value only for settling)."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        plan: Placement = placement.value
        for batch in batches:
            positions = batch.column("position").to_numpy()
            rounds, bins = plan.locate(positions)
            accesses = batch.column("accesses")
            lengths = accesses.value_lengths().to_numpy(zero_copy_only=False)
            flat = accesses.flatten()
            rows = flat.field("row").to_numpy()
            deferred = np.isin(rows, np.fromiter(plan.deferred, np.int64, len(plan.deferred)))
            yield batch_of(
                NEED,
                {
                    "round": np.repeat(rounds, lengths).tolist(),
                    "bin": np.repeat(bins, lengths).tolist(),
                    "table": flat.field("table").to_pylist(),
                    "key": flat.field("key").to_pylist(),
                    "deferred": deferred.tolist(),
                },
            )

    return task


def place_events(runnable: DataFrame, placement: Broadcast) -> DataFrame:
    """The runnable events with their `round` and `bin`."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        plan: Placement = placement.value
        for batch in batches:
            rounds, bins = plan.locate(batch.column("position").to_numpy())
            yield pa.RecordBatch.from_arrays(
                [
                    batch.column("position"),
                    batch.column("event"),
                    *_line_columns(batch),
                    pa.array(rounds, pa.int32()),
                    pa.array(bins, pa.int32()),
                ],
                names=[
                    "position",
                    "event",
                    "source_file",
                    "line_number",
                    "raw",
                    "fingerprint",
                    "round",
                    "bin",
                ],
            )

    columns = ["position", "event", "source_file", "line_number", "raw", "fingerprint"]
    ddl = (
        "position bigint, event binary, source_file string, line_number int, raw binary,"
        " fingerprint string, round int, bin int"
    )
    return runnable.select(*columns).mapInArrow(task, ddl)


def _line_columns(batch: pa.RecordBatch) -> list[pa.Array]:
    return [batch.column(n) for n in ("source_file", "line_number", "raw", "fingerprint")]


WORK_DDL = (
    "kind tinyint, bin int, route bigint, position bigint, table smallint, key string,"
    " value_int bigint, value_str string, value_obj binary, event binary, source_file string,"
    " line_number int, raw binary, fingerprint string"
)


def round_work(events: DataFrame, rows: DataFrame, routes: list[int], round_: int) -> DataFrame:
    """The records one round's tasks receive: rows (kind ROW) and events (kind EVENT), each
    with the `route` that sends its bin to the task of the same number."""
    route = F.element_at(F.array(*[F.lit(r) for r in routes]), F.col("bin") + 1)
    event_part = events.where(F.col("round") == round_).select(
        F.lit(EVENT).cast("tinyint").alias("kind"),
        "bin",
        route.alias("route"),
        "position",
        F.lit(None).cast("smallint").alias("table"),
        F.lit(None).cast("string").alias("key"),
        F.lit(None).cast("bigint").alias("value_int"),
        F.lit(None).cast("string").alias("value_str"),
        F.lit(None).cast("binary").alias("value_obj"),
        "event",
        "source_file",
        "line_number",
        "raw",
        "fingerprint",
    )
    row_part = rows.select(
        F.lit(ROW).cast("tinyint").alias("kind"),
        "bin",
        route.alias("route"),
        F.lit(-1).cast("bigint").alias("position"),
        "table",
        "key",
        "value_int",
        "value_str",
        "value_obj",
        F.lit(None).cast("binary").alias("event"),
        F.lit(None).cast("string").alias("source_file"),
        F.lit(None).cast("int").alias("line_number"),
        F.lit(None).cast("binary").alias("raw"),
        F.lit(None).cast("string").alias("fingerprint"),
    )
    return (
        event_part.unionByName(row_part)
        .repartition(len(routes), "route")
        .sortWithinPartitions("kind", "position")
    )


def execute_task(
    ledger: StreamingLedger, placement: Broadcast, sink: Sink, round_: int, emit_nets: bool
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The task of one bin (or several, merged in batch order) of one round.

    Records arrive rows first, then events by position; events are executed chunk by chunk
    as they arrive, so a task holds its rows but never all its events.
    """
    tables = tables_by_index(ledger)
    streams = ledger.streams

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        plan: Placement = placement.value
        deferred = deferred_test(ledger, plan.deferred)
        rows: dict[RowKey, Any] = {}
        nets: dict[RowKey, NetChange] = {}
        last = -1
        for batch in batches:
            columns = batch.to_pydict()
            runnables: list[Runnable] = []
            lines: dict[int, EventLine] = {}
            for i, kind in enumerate(columns["kind"]):
                if kind == ROW:
                    assert last == -1, "rows come before events"
                    table = tables[columns["table"][i]]
                    key = key_of(table, columns["key"][i])
                    rows[(table.name, key)] = value_of(
                        table,
                        columns["value_int"][i],
                        columns["value_str"][i],
                        columns["value_obj"][i],
                    )
                    continue
                position = columns["position"][i]
                assert position > last, "events come in batch order"
                last = position
                event = event_of(columns["event"][i])
                stream = streams[event.stream]
                keys = resolve_keys(stream, event.payload)
                assert isinstance(keys, list), "an admitted event's keys resolve"
                runnables.append(Runnable(position, event, stream, tuple(keys)))
                lines[position] = EventLine(
                    event,
                    columns["source_file"][i],
                    columns["line_number"][i],
                    columns["raw"][i],
                    columns["fingerprint"][i],
                )
            if not runnables:
                continue
            executed = list(execute_bin(rows, runnables, deferred))
            yield from sink.executed(round_, executed, lines)
            yield from _pending_records(ledger, executed)
            for row, change in net_changes(executed).items():
                if row in nets:
                    nets[row].after = change.after
                else:
                    nets[row] = change
        yield from sink.round_done(round_, nets)
        if emit_nets:
            yield from _net_records(ledger, nets)

    return task


def _pending_records(ledger: StreamingLedger, executed: list[Executed]) -> Iterator[pa.RecordBatch]:
    import pickle

    index = {name: i for i, name in enumerate(ledger.tables)}
    columns: dict[str, list] = {
        "tag": [],
        "table": [],
        "key": [],
        "position": [],
        "seq": [],
        "blob": [],
    }
    for item in executed:
        changes = getattr(item.outcome, "changes", ())
        for seq, change in enumerate(changes):
            if isinstance(change, PendingAdd):
                columns["tag"].append(PENDING)
                columns["table"].append(index[change.table])
                columns["key"].append(key_text(change.key))
                columns["position"].append(item.position)
                columns["seq"].append(seq)
                columns["blob"].append(
                    pickle.dumps((change.request_id, change.delta, change.low, change.high), PICKLE)
                )
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


def routes_for(spark: SparkSession, partitions: int) -> list[int]:
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
    return [routes[p] for p in range(partitions)]
