"""`run_spark`: the ledger executed in parallel on Spark, equal to `run_serial`.

The events, the initial state and the known request ids are given in memory, and the
`RunResult` is returned in memory: so the events are shipped to Spark in pickled chunks and
the outcomes come back the same way. Everything in between (admission, planning, execution in
bins, settling) is the batch machinery of `ledger_engine.spark.batch`, which the micro-batch
pipeline runs with PostgreSQL as source and sink instead.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ledger_engine.api import StreamingLedger
from ledger_engine.commutative import Settled
from ledger_engine.model import Change, Duplicate, Event, Rejection, RunResult
from ledger_engine.partition import Executed, NetChange, RowKey
from ledger_engine.partitioned import assemble
from ledger_engine.serial import initial_state
from ledger_engine.spark.admission import DUPLICATE, REJECTED, screen_chunks_task
from ledger_engine.spark.batch import BatchExecutor, BatchRun, ExecutionOptions
from ledger_engine.spark.codec import (
    OUTCOMES,
    OUTPUT,
    PICKLE,
    SCREENED,
    SETTLED,
    VALUE,
    batch_of,
    event_chunks,
    executed_blob,
    executed_of,
    key_text,
    spark_ddl,
    value_columns,
)
from ledger_engine.spark.execution import EventLine

CHUNK = 5_000  # events per pickled chunk shipped from the driver


class CollectSink:
    """Sends outcomes back to the driver as pickled chunks."""

    def executed(
        self, round_: int, items: list[Executed], lines: dict[int, EventLine]
    ) -> Iterator[pa.RecordBatch]:
        yield batch_of(OUTPUT, {"tag": [OUTCOMES], "blob": [executed_blob(items)]})

    def round_done(self, round_: int, nets: dict[RowKey, NetChange]) -> Iterator[pa.RecordBatch]:
        return iter(())

    def settled(
        self, items: list[Settled], nets: dict[RowKey, NetChange]
    ) -> Iterator[pa.RecordBatch]:
        packed = [
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
        ]
        yield batch_of(OUTPUT, {"tag": [SETTLED], "blob": [pickle.dumps(packed, PICKLE)]})


class MemorySources:
    """The initial state and known request ids of a `run_spark` call, as DataFrames."""

    def __init__(
        self,
        ledger: StreamingLedger,
        state: Mapping[str, Mapping[Any, Any]],
        known: Mapping[str, str],
    ) -> None:
        self.ledger = ledger
        self.state = state
        self.known_requests = known

    def known(self, spark: SparkSession, request_ids: DataFrame) -> DataFrame:
        table = pa.table(
            {
                "request_id": pa.array(list(self.known_requests), pa.string()),
                "known_fingerprint": pa.array(list(self.known_requests.values()), pa.string()),
            }
        )
        return spark.createDataFrame(table)

    def values(self, spark: SparkSession, rows: DataFrame) -> DataFrame:
        batches = []
        for index, (name, table) in enumerate(self.ledger.tables.items()):
            rows_of = self.state.get(name, {})
            columns: dict[str, list] = {
                "table": [index] * len(rows_of),
                "key": [],
                "value_int": [],
                "value_str": [],
                "value_obj": [],
            }
            columns["key"] = [key_text(k) for k in rows_of]
            if table.value_type is int:
                columns["value_int"] = list(rows_of.values())
                del columns["value_str"], columns["value_obj"]
            else:
                encoded = [value_columns(table, v) for v in rows_of.values()]
                columns["value_int"] = [e[0] for e in encoded]
                columns["value_str"] = [e[1] for e in encoded]
                columns["value_obj"] = [e[2] for e in encoded]
            batches.append(batch_of(VALUE, columns))
        state = spark.createDataFrame(pa.Table.from_batches(batches, schema=VALUE))
        return state.join(rows, ["table", "key"], "left_semi")


def run_spark(
    spark: SparkSession,
    ledger: StreamingLedger,
    events: Iterable[Event],
    state: Mapping[str, Mapping[Any, Any]] | None = None,
    known_requests: Mapping[str, str] | None = None,
    options: ExecutionOptions | None = None,
) -> RunResult:
    """Execute `events` in parallel on Spark; the result equals `run_serial`'s on the same
    input (see `ledger_engine.spark.batch` for how)."""
    ledger.check()
    batch = list(events)
    start = initial_state(ledger, state)
    executor = BatchExecutor(spark, ledger, options or ExecutionOptions())
    chunks = pa.table(
        {
            "start": pa.array([s for s, _ in event_chunks(batch, CHUNK)], pa.int64()),
            "chunk": pa.array([c for _, c in event_chunks(batch, CHUNK)], pa.binary()),
        }
    )
    screened = (
        spark.createDataFrame(chunks)
        .repartition(executor.bins)
        .mapInArrow(screen_chunks_task(ledger), spark_ddl(SCREENED))
    )
    sources = MemorySources(ledger, start, known_requests or {})
    run = executor.execute(screened, sources, CollectSink())
    try:
        return _collect(ledger, batch, start, run)
    finally:
        run.release()


def _collect(
    ledger: StreamingLedger, batch: Sequence[Event], start: Any, run: BatchRun
) -> RunResult:
    verdicts: list[Rejection | Duplicate | None] = [None] * len(batch)
    ended = (
        run.admitted.where(F.col("status") != 0)
        .select("position", "status", "reason", "detail", "duplicate_kind")
        .toArrow()
        .to_pydict()
    )
    for position, status, reason, detail, kind in zip(*ended.values(), strict=True):
        event = batch[position]
        if status == REJECTED:
            verdicts[position] = Rejection(event.stream, event.request_id, reason, detail)
        else:
            assert status == DUPLICATE
            verdicts[position] = Duplicate(event.stream, event.request_id, kind)
    executed: dict[int, Executed] = {}
    for output in run.outputs:
        for blob in output.where(F.col("tag") == OUTCOMES).select("blob").toArrow()["blob"]:
            executed.update((item.position, item) for item in executed_of(blob.as_py(), batch))
    settled: list[Settled] = []
    for blob in run.settled.where(F.col("tag") == SETTLED).select("blob").toArrow()["blob"]:
        for position, seq, rid, table, key, before, after in pickle.loads(blob.as_py()):
            settled.append(Settled(position, seq, Change(rid, table, key, before, after)))
    return assemble(ledger, list(batch), start, verdicts, executed, settled)
