"""Screening a unit of events where it lies: what admission and planning need, as columns.

A *unit* is a run of consecutive events of a batch that one task reads: a landed file, a
partition of a DataFrame of lines, or a chunk of in-memory events. Its events are numbered
from 0 (`index`); the driver turns (unit, index) into batch positions once it knows every
unit's count (`unit_offsets`), so screening needs no pass over the batch beforehand.

For each event, `screen` (`ledger_engine.core.admission`) checks it on its own, and the unit's
screening gives three tables:

- `ADMISSION_SCHEMA`, for the driver, of each event with a valid request id (the others take
  part in no deduplication): the id, whether the event runs, and its rows as row ids and access
  flags (what duplicates and the plan are decided from);
- `EVENTS_SCHEMA`, kept where it was made until the plan routes it: each event with a valid
  request id, pickled with its resolved keys;
- `ENDED_SCHEMA`: the events screening rejected, with their reason and their line.

A unit read for the system of record (`journal`) also gives `LINES_SCHEMA`: every line as
the ledger's journal stores it (`ledger_engine.store.staging`), with the fingerprint of its
request, so that the batch's commit never needs the events on the driver.
"""

from __future__ import annotations

import marshal
import pickle
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ledger_engine.core.admission import screen
from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.core.ingest import parse_line
from ledger_engine.core.records import INVALID_EVENT, Event
from ledger_engine.runtime.parallel.bins import table_indexes
from ledger_engine.runtime.parallel.plan import access_flags, row_ids
from ledger_engine.store.staging import clean_text, payload_of, request_id_of

PICKLE = pickle.HIGHEST_PROTOCOL

ADMISSION_SCHEMA = pa.schema(
    [
        ("unit", pa.int32()),
        ("index", pa.int64()),
        ("request_id", pa.string()),
        ("rid_hash", pa.int64()),  # of the request id (`request_id_hashes`)
        ("stream", pa.string()),  # null: the stream is not text
        ("runs", pa.bool_()),  # passed every check (it may still be a duplicate)
        ("acc_row", pa.list_(pa.int64())),
        ("acc_flags", pa.list_(pa.int8())),
    ]
)
EVENTS_SCHEMA = pa.schema([("unit", pa.int32()), ("index", pa.int64()), ("event", pa.binary())])
ENDED_SCHEMA = pa.schema(
    [
        ("unit", pa.int32()),
        ("index", pa.int64()),
        ("stream", pa.string()),
        ("request_id", pa.string()),
        ("reason", pa.string()),
        ("detail", pa.string()),
        ("source_file", pa.string()),
        ("line_number", pa.int32()),
        ("raw", pa.binary()),
    ]
)
COUNTS_SCHEMA = pa.schema([("unit", pa.int32()), ("events", pa.int64())])
# Every line of a unit as the journal stores it: stream and request id where they are
# storable text, the payload as canonical JSON where it is an object, the request's
# fingerprint, and the raw bytes (kept for a rejection).
LINES_SCHEMA = pa.schema(
    [
        ("unit", pa.int32()),
        ("index", pa.int64()),
        ("source_file", pa.string()),
        ("line_number", pa.int32()),
        ("stream", pa.string()),
        ("request_id", pa.string()),
        ("payload", pa.string()),
        ("fingerprint", pa.string()),
        ("raw", pa.binary()),
    ]
)

# Where an event came from: (source file, line number, raw bytes), all None in memory.
Line = tuple[str | None, int | None, bytes | None]
IN_MEMORY: Line = (None, None, None)


def event_record(event: Event, keys: tuple[Any, ...] | None) -> bytes:
    """An event and its resolved keys (None for an event that does not run), as stored.

    An event that runs passed screening, so its payload holds JSON's types only: it is
    stored with `marshal` (tagged `m`), which loads in a third of pickle's time; anything
    else (a rejected event's payload may hold any object) is pickled (tagged `p`).
    """
    if keys is not None:
        try:
            return b"m" + marshal.dumps((event.stream, event.request_id, event.payload, keys))
        except ValueError:  # a subclass of a JSON type, say: marshal takes exact types only
            pass
    return b"p" + pickle.dumps((event, keys), PICKLE)


def event_of_record(blob: bytes) -> tuple[Event, tuple[Any, ...] | None]:
    """The event and keys `event_record` stored."""
    if blob[:1] == b"m":
        stream, request_id, payload, keys = marshal.loads(blob[1:])
        return Event(stream, request_id, payload), keys
    return pickle.loads(blob[1:])


def request_id_hashes(ids: list[str]) -> np.ndarray:
    """64-bit hashes of request ids (pandas' keyed SipHash), for finding the ids that come
    more than once with integer sorts; equal hashes are then compared as text."""
    objects = np.empty(len(ids), dtype=object)
    objects[:] = ids
    return pd.util.hash_array(objects, categorize=False).view(np.int64)


def _text(value: Any) -> str | None:
    return value if type(value) is str else None


class UnitScreening:
    """The screened columns of the units one task reads, built one event at a time."""

    def __init__(self, ledger: StreamingLedger, journal: bool = False) -> None:
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
        self.counts: dict[int, int] = {}
        self._admission: dict[str, list] = {f.name: [] for f in ADMISSION_SCHEMA}
        self._offsets = [0]
        self._tables: list[int] = []
        self._keys: list[Any] = []
        self._flags: list[int] = []
        self._events: dict[str, list] = {f.name: [] for f in EVENTS_SCHEMA}
        self._ended: dict[str, list] = {f.name: [] for f in ENDED_SCHEMA}
        # Kept only for a unit read for the system of record (fingerprints too: hashed here).
        self._lines: dict[str, list] | None = (
            {f.name: [] for f in LINES_SCHEMA} if journal else None
        )

    def lines(self, unit: int, source_file: str | None, lines: Iterable[tuple[int, bytes]]) -> None:
        """Screen a unit of non-blank lines ((line number, raw bytes) in order)."""
        index = -1
        for index, (number, raw) in enumerate(lines):
            parsed = parse_line(raw)
            line = (source_file, number, raw)
            if type(parsed) is str:
                self._end(unit, index, None, None, INVALID_EVENT, parsed, line)
                if self._lines is not None:
                    self._line(unit, index, None, None, line)
            else:
                self.event(unit, index, parsed, line)
        self.counts[unit] = index + 1

    def events(self, unit: int, events: Iterable[Event]) -> None:
        """Screen a unit of in-memory events."""
        index = -1
        for index, event in enumerate(events):
            self.event(unit, index, event, IN_MEMORY)
        self.counts[unit] = index + 1

    def event(self, unit: int, index: int, event: Event, line: Line) -> None:
        """Screen one event, `index`-th of its unit."""
        screened = screen(self.streams, event, fingerprinted=self._lines is not None)
        if self._lines is not None:
            self._line(unit, index, event, screened.fingerprint or None, line)
        rid = screened.request_id
        rejection = screened.rejection
        if rejection is not None:
            self._end(
                unit, index, _text(event.stream), rid, rejection.reason, rejection.detail, line
            )
            if rid is not None:  # a later event with its id is a duplicate of this one
                self._event(unit, index, event_record(event, None))
                self._admit(unit, index, rid, event.stream, False)
            return
        self._event(unit, index, event_record(event, screened.keys))
        assert screened.stream is not None and screened.keys is not None
        tables, flags = self.layouts[screened.stream.name]
        assert len(screened.keys) == len(tables), "a key per binding"
        self._tables.extend(tables)
        self._keys.extend(screened.keys)
        self._flags.extend(flags)
        self._admit(unit, index, rid, event.stream, True)

    def _admit(self, unit: int, index: int, rid: str | None, stream: Any, runs: bool) -> None:
        a = self._admission
        a["unit"].append(unit)
        a["index"].append(index)
        a["request_id"].append(rid)
        a["stream"].append(_text(stream))
        a["runs"].append(runs)
        self._offsets.append(len(self._tables))

    def _line(
        self, unit: int, index: int, event: Event | None, fingerprint: str | None, line: Line
    ) -> None:
        lines = self._lines
        assert lines is not None and line[0] is not None and line[1] is not None
        lines["unit"].append(unit)
        lines["index"].append(index)
        lines["source_file"].append(line[0])
        lines["line_number"].append(line[1])
        lines["stream"].append(clean_text(event.stream) if event else None)
        lines["request_id"].append(request_id_of(event.request_id) if event else None)
        lines["payload"].append(payload_of(event))
        lines["fingerprint"].append(fingerprint)
        lines["raw"].append(line[2])

    def _event(self, unit: int, index: int, blob: bytes) -> None:
        e = self._events
        e["unit"].append(unit)
        e["index"].append(index)
        e["event"].append(blob)

    def _end(
        self,
        unit: int,
        index: int,
        stream: str | None,
        rid: str | None,
        reason: str,
        detail: str,
        line: Line,
    ) -> None:
        e = self._ended
        e["unit"].append(unit)
        e["index"].append(index)
        e["stream"].append(stream)
        e["request_id"].append(rid)
        e["reason"].append(reason)
        e["detail"].append(detail)
        e["source_file"].append(line[0])
        e["line_number"].append(line[1])
        e["raw"].append(line[2])

    def admission(self) -> pa.Table:
        """Every screened event's admission columns."""
        columns: dict[str, Any] = {
            name: values
            for name, values in self._admission.items()
            if name[:4] != "acc_" and name != "rid_hash"
        }
        columns["rid_hash"] = request_id_hashes(self._admission["request_id"])
        offsets = pa.array(self._offsets, pa.int32())
        rows = row_ids(self._tables, self._keys)
        columns["acc_row"] = pa.ListArray.from_arrays(offsets, pa.array(rows, pa.int64()))
        columns["acc_flags"] = pa.ListArray.from_arrays(
            offsets, pa.array(np.asarray(self._flags, dtype=np.int8), pa.int8())
        )
        return pa.table(columns, schema=ADMISSION_SCHEMA)

    def stored_events(self) -> pa.Table:
        """The events kept for routing (those with a valid request id)."""
        return pa.table(self._events, schema=EVENTS_SCHEMA)

    def ended(self) -> pa.Table:
        """The events screening rejected."""
        return pa.table(self._ended, schema=ENDED_SCHEMA)

    def journal_lines(self) -> pa.Table | None:
        """Every line as the journal stores it (None: the unit is not read for it)."""
        if self._lines is None:
            return None
        return pa.table(self._lines, schema=LINES_SCHEMA)

    def unit_counts(self) -> pa.Table:
        """How many events each unit holds."""
        return pa.table(
            {"unit": list(self.counts), "events": list(self.counts.values())}, schema=COUNTS_SCHEMA
        )
