"""Settling deferred adds on Spark: each deferred row's pending adds, in batch order.

The pending adds of every round are shuffled by row and sorted by position; `settle_task`
reads the rows' values before the batch from the row source, walks each row's adds
(`ledger_engine.runtime.parallel.settle.settle_row`) and hands the settled changes to the batch's
sink. A row whose running total leaves the int64 range is reported (tag OVERFLOW) instead: the
driver then plans the batch again with that row ordered.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.core.transaction import PendingAdd
from ledger_engine.runtime.gc_pause import gc_paused
from ledger_engine.runtime.parallel.bins import NetChange, RowKey
from ledger_engine.runtime.parallel.settle import Overflow, Pending, Settled, settle_row
from ledger_engine.runtime.spark.codec import (
    OUTPUT,
    OVERFLOW,
    PENDING,
    batch_of,
    key_of,
    tables_by_index,
)
from ledger_engine.runtime.spark.execution import RowSource, Task
from ledger_engine.runtime.spark.profile import TaskClock


class SettledSink(Protocol):
    """Where settled changes go (see `ledger_engine.runtime.spark.execution.Sink`)."""

    def settled(
        self, items: list[Settled], nets: dict[RowKey, NetChange]
    ) -> Iterable[pa.RecordBatch]:
        """Take one row's settled changes and its net change over the batch."""
        ...

    def settle_done(self) -> Iterable[pa.RecordBatch]:
        """Called once at the end of every settling task."""
        ...


def pending_by_row(outputs: DataFrame, tasks: int) -> DataFrame:
    """Every pending add, grouped by row into `tasks` tasks and sorted by position.

    As many tasks as a round has bins: a settling task's fixed cost (a connection, its
    staging transaction) is most of its work, since few rows are deferred."""
    return (
        outputs.where(F.col("tag") == PENDING)
        .select("table", "key", "position", "seq", "blob")
        .repartition(tasks, "table", "key")
        .sortWithinPartitions("table", "key", "position")
    )


def settle_task(ledger: StreamingLedger, source: RowSource, sink: SettledSink) -> Task:
    tables = tables_by_index(ledger)

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        clock = TaskClock("settle")
        source.open()
        try:
            with gc_paused():
                yield from _settle(batches, clock)
            outputs = list(sink.settle_done())
            clock.lap("sink")
            yield from outputs
            yield clock.record()
        finally:
            source.close()

    def _settle(batches: Iterator[pa.RecordBatch], clock: TaskClock) -> Iterator[pa.RecordBatch]:
        rows = _rows(batches, tables)
        clock.lap("input")
        bases = _bases(source, tables, rows)
        clock.lap("read rows")
        clock.items = sum(len(items) for items in rows.values())
        overflowed: list[tuple[int, str]] = []
        for (table_index, key), items in rows.items():
            table = tables[table_index]
            base = bases[(table_index, key)]
            try:
                settled = list(settle_row(base, items))
            except Overflow:
                overflowed.append((table_index, key))
                continue
            if not settled:  # probes alone: the row keeps its value
                continue
            net = {(table.name, key_of(table, key)): NetChange(base, settled[-1].change.after)}
            yield from sink.settled(settled, net)
        if overflowed:
            yield batch_of(
                OUTPUT,
                {
                    "tag": [OVERFLOW] * len(overflowed),
                    "table": [t for t, _ in overflowed],
                    "key": [k for _, k in overflowed],
                },
            )

    return task


def _rows(
    batches: Iterator[pa.RecordBatch], tables: list[Any]
) -> dict[tuple[int, str], list[Pending]]:
    """Each (table index, key text) row's pending adds, in batch order."""
    rows: dict[tuple[int, str], list[Pending]] = {}
    for batch in batches:
        columns = batch.to_pydict()
        for i, table_index in enumerate(columns["table"]):
            key = columns["key"][i]
            table = tables[table_index]
            request_id, delta, low, high = pickle.loads(columns["blob"][i])
            add = PendingAdd(request_id, table.name, key_of(table, key), delta, low, high)
            rows.setdefault((table_index, key), []).append(
                Pending(columns["position"][i], columns["seq"][i], add)
            )
    return rows


def _bases(
    source: RowSource, tables: list[Any], rows: dict[tuple[int, str], list[Pending]]
) -> dict[tuple[int, str], Any]:
    """Each row's value before the batch (deferred rows are never written during it)."""
    by_table: dict[int, list[str]] = {}
    for table_index, key in rows:
        by_table.setdefault(table_index, []).append(key)
    bases: dict[tuple[int, str], Any] = {}
    for table_index, keys in by_table.items():
        table = tables[table_index]
        found = source.read(0, table, [key_of(table, k) for k in keys])
        for key in keys:
            bases[(table_index, key)] = found.get(key_of(table, key))
    return bases
