"""Admission on Spark: screen every event where it lies, then settle duplicates by request id.

Screening (`screen_files_task`, the pipeline's) is a `mapInArrow` over the batch's
events: each event's request id, stream, payload and keys are checked on their own
(`ledger_engine.core.admission.screen`), and each binding's row is listed with its row id and access
flags. Duplicates (`admit`) are then found on the driver, over the compact columns it collects
to plan the batch anyway: for each id, the first event in batch order is the one that counts,
unless an earlier batch already executed the id (`known`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from ledger_engine.core.admission import screen
from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.core.ingest import nonblank_lines, parse_line
from ledger_engine.core.records import (
    DUPLICATE,
    EXISTS,
    EXISTS_WITH_DIFFERENT_PAYLOAD,
    INVALID_EVENT,
    REJECTED,
    Event,
)
from ledger_engine.core.storable import key_text
from ledger_engine.runtime.gc_pause import gc_paused
from ledger_engine.runtime.parallel.bins import table_indexes
from ledger_engine.runtime.parallel.plan import access_flags, row_ids
from ledger_engine.runtime.spark.codec import (
    SCREENED,
    batch_of,
    event_blob,
    list_array,
)

ScreenTask = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


class _Screener:
    """Builds SCREENED record batches, one event at a time."""

    def __init__(self, ledger: StreamingLedger) -> None:
        self.streams = ledger.streams
        index = table_indexes(ledger)
        # Per stream, its bindings' table indexes and access flags: the same for every event.
        self.layouts = {
            name: (
                [index[b.table.name] for b in stream.bindings],
                [access_flags(b.access) for b in stream.bindings],
            )
            for name, stream in ledger.streams.items()
        }
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
        tables, flags = self.layouts[screened.stream.name]
        assert len(screened.keys) == len(tables), "a key per binding"
        self.tables.extend(tables)
        self.keys.extend(screened.keys)
        self.flags.extend(flags)
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
FLUSH_EVERY = 4096


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


# The columns of the screened events that admission and planning read, on the driver.
ADMISSION_COLUMNS = ("position", "request_id", "fingerprint", "runs", "acc_row", "acc_flags")
VERDICTS = pa.schema(
    [("position", pa.int64()), ("status", pa.string()), ("duplicate_kind", pa.string())]
)

KnownLookup = Callable[[list[str]], Mapping[str, str]]


def admit(screened: pa.Table, known: KnownLookup) -> tuple[pa.Table, pa.Table]:
    """Admission of a batch's screened events (`ADMISSION_COLUMNS`): (the runnable events in
    batch order, the verdicts (`VERDICTS`) of the events admission ends).

    For each request id, the first event in batch order is the one that counts, unless an
    earlier batch already executed the id (`known(ids)`: the fingerprints of those of `ids`
    that were executed); every other event with the id is a duplicate, of the same payload
    (`EXISTS`) if its fingerprint is the counted one's. A screened event that is neither
    a duplicate nor runnable is rejected.

    One pass in batch order over compact columns (a position, an id and a fingerprint per
    event), in place of a shuffle and a window over request ids: cheaper for the batches a
    driver holds, and the same verdicts (`tests/engine`: `run_spark` equals the serial runner).
    """
    screened = screened.sort_by("position")
    ids = screened.column("request_id").to_pylist()
    fingerprints = screened.column("fingerprint").to_pylist()
    runs = screened.column("runs").to_pylist()
    executed = known(sorted({rid for rid in ids if rid is not None}))
    counted: dict[str, str | None] = dict(executed)  # id -> the fingerprint that counts
    ended, statuses, kinds = [], [], []
    for index, rid in enumerate(ids):
        if rid is not None:
            if rid in counted:
                same = fingerprints[index] is not None and fingerprints[index] == counted[rid]
                ended.append(index)
                statuses.append(DUPLICATE)
                kinds.append(EXISTS if same else EXISTS_WITH_DIFFERENT_PAYLOAD)
                continue
            counted[rid] = fingerprints[index]
        if not runs[index]:
            ended.append(index)
            statuses.append(REJECTED)
            kinds.append(None)
    keep = np.ones(len(ids), dtype=bool)
    keep[ended] = False
    verdicts = pa.table(
        {
            "position": screened.column("position")
            .take(pa.array(ended, pa.int64()))
            .cast(pa.int64()),
            "status": pa.array(statuses, pa.string()),
            "duplicate_kind": pa.array(kinds, pa.string()),
        },
        schema=VERDICTS,
    )
    return screened.filter(pa.array(keep)), verdicts
