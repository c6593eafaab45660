"""Admission on Spark: screen every event where it lies, then settle duplicates by request id.

Screening (`screen_events`) is a `mapInArrow` over the batch's events: each event's request
id, stream, payload and keys are checked on their own (`ledger_engine.admission.screen`), and
each binding's row is listed with its row id and access flags. Duplicates (`admit`) are then
found with a window over request ids: for each id, the first event in batch order is the one
that counts, unless an earlier batch already executed the id (`known`).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ledger_engine.admission import screen
from ledger_engine.api import StreamingLedger
from ledger_engine.gc_pause import gc_paused
from ledger_engine.ingest import nonblank_lines, parse_line
from ledger_engine.model import (
    DUPLICATE,
    EXISTS,
    EXISTS_WITH_DIFFERENT_PAYLOAD,
    INVALID_EVENT,
    REJECTED,
    Event,
)
from ledger_engine.partition import table_indexes
from ledger_engine.schedule import access_flags, row_ids
from ledger_engine.spark.codec import (
    SCREENED,
    batch_of,
    event_blob,
    list_array,
    spark_ddl,
)
from ledger_engine.values import key_text

# `status` of an admitted event: it runs, or admission ended it (REJECTED, DUPLICATE).
RUNS = "runs"

ScreenTask = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


class _Screener:
    """Builds SCREENED record batches, one event at a time."""

    def __init__(self, ledger: StreamingLedger) -> None:
        self.streams = ledger.streams
        self.index = table_indexes(ledger)
        self._reset()

    def _reset(self) -> None:
        self.columns: dict[str, list] = {f.name: [] for f in SCREENED if f.name[:4] != "acc_"}
        self.offsets: list[int] = [0]
        self.tables: list[int] = []
        self.keys: list[Any] = []
        self.flags: list[int] = []

    def __len__(self) -> int:
        return len(self.columns["position"])

    def add(self, position: int, event: Event | None, problem: str | None, line: Line) -> None:
        c = self.columns
        c["position"].append(position)
        c["source_file"].append(line[0])
        c["line_number"].append(line[1])
        c["raw"].append(line[2])
        if event is None:  # the line holds no event at all
            assert problem is not None
            self._ended(None, None, None, INVALID_EVENT, problem)
            return
        screened = screen(self.streams, event)
        rejection = screened.rejection
        fingerprint = screened.fingerprint or None
        if rejection is not None:
            blob = event_blob(event, None)
            self._ended(blob, screened.request_id, fingerprint, rejection.reason, rejection.detail)
            return
        assert screened.stream is not None and screened.keys is not None
        c["event"].append(event_blob(event, screened.keys))
        c["request_id"].append(screened.request_id)
        c["fingerprint"].append(fingerprint)
        c["runs"].append(True)
        c["reason"].append(None)
        c["detail"].append(None)
        for binding, key in zip(screened.stream.bindings, screened.keys, strict=True):
            self.tables.append(self.index[binding.table.name])
            self.keys.append(key)
            self.flags.append(access_flags(binding.access))
        self.offsets.append(len(self.tables))

    def _ended(
        self,
        blob: bytes | None,
        request_id: str | None,
        fingerprint: str | None,
        reason: str,
        detail: str,
    ) -> None:
        c = self.columns
        c["event"].append(blob)
        c["request_id"].append(request_id)
        c["fingerprint"].append(fingerprint)
        c["runs"].append(False)
        c["reason"].append(reason)
        c["detail"].append(detail)
        self.offsets.append(len(self.tables))

    def flush(self) -> Iterator[pa.RecordBatch]:
        if not len(self):
            return
        columns: dict[str, Any] = dict(self.columns)
        offsets = self.offsets
        columns["acc_table"] = list_array(offsets, self.tables, pa.int16())
        columns["acc_key"] = list_array(offsets, [key_text(k) for k in self.keys], pa.string())
        columns["acc_row"] = list_array(offsets, row_ids(self.tables, self.keys), pa.int64())
        columns["acc_flags"] = list_array(offsets, self.flags, pa.int8())
        yield batch_of(SCREENED, columns)
        self._reset()


Line = tuple[str | None, int | None, bytes | None]  # source file, line number, raw bytes
NO_LINE: Line = (None, None, None)
FLUSH_EVERY = 4096


def screen_chunks_task(ledger: StreamingLedger) -> ScreenTask:
    """Screening of in-memory events shipped as chunks (`codec.event_chunks`): input rows are
    (start, chunk)."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        screener = _Screener(ledger)
        with gc_paused():
            for batch in batches:
                starts = batch.column("start").to_pylist()
                chunks = batch.column("chunk").to_pylist()
                for start, chunk in zip(starts, chunks, strict=True):
                    for offset, fields in enumerate(pickle.loads(chunk)):
                        screener.add(start + offset, Event(*fields), None, NO_LINE)
                        if len(screener) >= FLUSH_EVERY:
                            yield from screener.flush()
            yield from screener.flush()

    return task


def screen_files_task(ledger: StreamingLedger, offsets: dict[str, int]) -> ScreenTask:
    """Screening of landed files: input rows are (name, content); `offsets` gives each file's
    first position in the batch (files by name, then non-blank lines by number)."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        screener = _Screener(ledger)
        with gc_paused():
            for batch in batches:
                names = batch.column("name").to_pylist()
                contents = batch.column("content").to_pylist()
                for name, content in zip(names, contents, strict=True):
                    position = offsets[name]
                    for number, raw in nonblank_lines(content or b""):
                        parsed = parse_line(raw)
                        line = (name, number, raw)
                        if isinstance(parsed, Event):
                            screener.add(position, parsed, None, line)
                        else:
                            screener.add(position, None, parsed, line)
                        position += 1
                        if len(screener) >= FLUSH_EVERY:
                            yield from screener.flush()
            yield from screener.flush()

    return task


def screened_ddl() -> str:
    return spark_ddl(SCREENED)


def verdicts(screened: DataFrame, known: DataFrame) -> DataFrame:
    """(position, status, duplicate_kind) of every event: `status` is RUNS, REJECTED or
    DUPLICATE; `known` holds (request_id, known_fingerprint) of ids executed earlier.

    Only these narrow columns are shuffled (by request id); the screened events themselves
    never move for admission.
    """
    by_id = Window.partitionBy("request_id").orderBy("position")
    ranked = (
        screened.select("position", "request_id", "fingerprint", "runs")
        .withColumn("first_fingerprint", F.first("fingerprint").over(by_id))
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
    )
    kind = F.when(
        duplicate,
        F.when(F.col("fingerprint") == first, F.lit(EXISTS)).otherwise(
            F.lit(EXISTS_WITH_DIFFERENT_PAYLOAD)
        ),
    )
    return ranked.select("position", status.alias("status"), kind.alias("duplicate_kind"))
