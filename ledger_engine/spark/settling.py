"""Settling deferred adds on Spark: each deferred row's pending adds, in batch order.

The pending adds of every round are joined with their rows' values before the batch, shuffled
by row and sorted by position; `settle_task` walks each row's adds
(`ledger_engine.commutative.settle_row`) and hands the settled changes to the batch's sink. A
row whose running total leaves the int64 range is reported (tag OVERFLOW) instead: the driver
then plans the batch again with that row ordered.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ledger_engine.api import StreamingLedger
from ledger_engine.commutative import Overflow, Pending, Settled, settle_row
from ledger_engine.partition import NetChange, RowKey
from ledger_engine.spark.codec import (
    OUTPUT,
    OVERFLOW,
    PENDING,
    batch_of,
    key_of,
    tables_by_index,
    value_of,
)
from ledger_engine.transaction import PendingAdd


class SettledSink(Protocol):
    """Where settled changes go (see `ledger_engine.spark.execution.Sink`)."""

    def settled(
        self, items: list[Settled], nets: dict[RowKey, NetChange]
    ) -> Iterable[pa.RecordBatch]: ...


def pending_with_base(outputs: DataFrame, values: DataFrame) -> DataFrame:
    """Every pending add with its row's value before the batch, grouped by row and sorted by
    position."""
    pending = outputs.where(F.col("tag") == PENDING).select(
        "table", "key", "position", "seq", "blob"
    )
    return (
        pending.join(values, ["table", "key"], "left")
        .repartition("table", "key")
        .sortWithinPartitions("table", "key", "position")
    )


def settle_task(
    ledger: StreamingLedger, sink: SettledSink
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    tables = tables_by_index(ledger)

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        overflowed: list[tuple[int, str]] = []
        for row_index, key_text, base, items in _rows(batches, tables):
            table = tables[row_index]
            try:
                settled = list(settle_row(base, items))
            except Overflow:
                overflowed.append((row_index, key_text))
                continue
            net = {(table.name, key_of(table, key_text)): NetChange(base, settled[-1].change.after)}
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
) -> Iterator[tuple[int, str, Any, list[Pending]]]:
    """(table index, key text, base value, pending adds in order) for each row."""
    current: tuple[int, str] | None = None
    base: Any = None
    items: list[Pending] = []
    for batch in batches:
        columns = batch.to_pydict()
        for i, table_index in enumerate(columns["table"]):
            row = (table_index, columns["key"][i])
            if row != current:
                if current is not None:
                    yield current[0], current[1], base, items
                current, items = row, []
                table = tables[table_index]
                base = value_of(
                    table, columns["value_int"][i], columns["value_str"][i], columns["value_obj"][i]
                )
            table = tables[table_index]
            request_id, delta, low, high = pickle.loads(columns["blob"][i])
            add = PendingAdd(request_id, table.name, key_of(table, row[1]), delta, low, high)
            items.append(Pending(columns["position"][i], columns["seq"][i], add))
    if current is not None:
        yield current[0], current[1], base, items
