"""Admission on Spark: screen every event where it lies, then settle duplicates by request id.

Screening (`screen_events`) is a `mapInArrow` over the batch's events: each event's request
id, stream, payload and keys are checked on their own (`ledger_engine.admission.screen`), and
each binding's row is listed with its row id and access flags. Duplicates (`admit`) are then
found with a window over request ids: for each id, the first event in batch order is the one
that counts, unless an earlier batch already executed the id (`known`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pyarrow as pa
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ledger_engine.admission import screen
from ledger_engine.api import StreamingLedger
from ledger_engine.ingest import parse_line
from ledger_engine.model import EXISTS, EXISTS_WITH_DIFFERENT_PAYLOAD, INVALID_EVENT, Event
from ledger_engine.partition import table_indexes
from ledger_engine.schedule import access_flags, row_id
from ledger_engine.spark.codec import (
    PICKLE,
    SCREENED,
    batch_of,
    event_blob,
    key_text,
    spark_ddl,
)

# `status` of an admitted event.
RUNS, REJECTED, DUPLICATE = 0, 1, 2

ScreenTask = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


class _Screener:
    """Builds SCREENED record batches, one event at a time."""

    def __init__(self, ledger: StreamingLedger) -> None:
        self.streams = ledger.streams
        self.index = table_indexes(ledger)
        self.columns: dict[str, list] = {f.name: [] for f in SCREENED}

    def add(
        self,
        position: int,
        event: Event | None,
        problem: str | None,
        blob: bytes | None = None,
        source_file: str | None = None,
        line_number: int | None = None,
        raw: bytes | None = None,
    ) -> None:
        c = self.columns
        c["position"].append(position)
        c["source_file"].append(source_file)
        c["line_number"].append(line_number)
        c["raw"].append(raw)
        if event is None:  # the line holds no event at all
            assert problem is not None
            for name, value in (("event", None), ("request_id", None), ("fingerprint", None)):
                c[name].append(value)
            c["runs"].append(False)
            c["reason"].append(INVALID_EVENT)
            c["detail"].append(problem)
            c["accesses"].append(None)
            return
        screened = screen(self.streams, event)
        c["event"].append(blob if blob is not None else event_blob(event))
        c["request_id"].append(screened.request_id)
        c["fingerprint"].append(screened.fingerprint or None)
        rejection = screened.rejection
        c["runs"].append(rejection is None)
        c["reason"].append(None if rejection is None else rejection.reason)
        c["detail"].append(None if rejection is None else rejection.detail)
        if rejection is not None:
            c["accesses"].append(None)
            return
        assert screened.stream is not None and screened.keys is not None
        accesses = []
        for binding, key in zip(screened.stream.bindings, screened.keys, strict=True):
            table = self.index[binding.table.name]
            accesses.append(
                {
                    "table": table,
                    "key": key_text(key),
                    "row": row_id(table, key),
                    "flags": access_flags(binding.access),
                }
            )
        c["accesses"].append(accesses)

    def flush(self) -> Iterator[pa.RecordBatch]:
        if self.columns["position"]:
            yield batch_of(SCREENED, self.columns)
            self.columns = {f.name: [] for f in SCREENED}


def screen_chunks_task(ledger: StreamingLedger) -> ScreenTask:
    """Screening of in-memory events shipped as chunks (`codec.event_chunks`): input rows are
    (start, chunk)."""
    import pickle

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        screener = _Screener(ledger)
        for batch in batches:
            for start, chunk in zip(
                batch.column("start").to_pylist(), batch.column("chunk").to_pylist(), strict=True
            ):
                for offset, fields in enumerate(pickle.loads(chunk)):
                    blob = pickle.dumps(fields, PICKLE)
                    screener.add(start + offset, Event(*fields), None, blob)
                yield from screener.flush()

    return task


def screen_files_task(ledger: StreamingLedger, offsets: dict[str, int]) -> ScreenTask:
    """Screening of landed files: input rows are (name, content); `offsets` gives each file's
    first position in the batch (files by name, then non-blank lines by number)."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        screener = _Screener(ledger)
        for batch in batches:
            names = batch.column("name").to_pylist()
            contents = batch.column("content").to_pylist()
            for name, content in zip(names, contents, strict=True):
                position = offsets[name]
                for number, raw in enumerate((content or b"").split(b"\n"), start=1):
                    if not raw.strip():
                        continue
                    raw = raw.removesuffix(b"\r")
                    parsed = parse_line(raw)
                    if isinstance(parsed, Event):
                        screener.add(position, parsed, None, None, name, number, raw)
                    else:
                        screener.add(position, None, parsed, None, name, number, raw)
                    position += 1
                    if len(screener.columns["position"]) >= 4096:
                        yield from screener.flush()
            yield from screener.flush()

    return task


def screened_ddl() -> str:
    return spark_ddl(SCREENED)


def admit(screened: DataFrame, known: DataFrame) -> DataFrame:
    """`screened` with each event's `status` (RUNS, REJECTED, DUPLICATE) and, for duplicates,
    `duplicate_kind`. `known` holds (request_id, known_fingerprint) of ids executed earlier."""
    by_id = Window.partitionBy("request_id").orderBy("position")
    ranked = (
        screened.withColumn("first_fingerprint", F.first("fingerprint").over(by_id))
        .withColumn("rank", F.row_number().over(by_id))
        .join(known, "request_id", "left")
    )
    first = F.coalesce(F.col("known_fingerprint"), F.col("first_fingerprint"))
    duplicate = F.col("request_id").isNotNull() & (
        F.col("known_fingerprint").isNotNull() | (F.col("rank") > 1)
    )
    status = (
        F.when(duplicate, F.lit(DUPLICATE))
        .when(F.col("runs"), F.lit(RUNS))
        .otherwise(F.lit(REJECTED))
        .cast("tinyint")
    )
    kind = F.when(
        duplicate,
        F.when(F.col("fingerprint") == first, F.lit(EXISTS)).otherwise(
            F.lit(EXISTS_WITH_DIFFERENT_PAYLOAD)
        ),
    )
    return (
        ranked.withColumn("status", status)
        .withColumn("duplicate_kind", kind)
        .drop("first_fingerprint", "rank", "known_fingerprint")
    )
