"""A run's outcome as columns (`ColumnarRunResult`), and its record view (`RunResult`).

Large runs stay columnar from the tasks to the caller: every table here is built by Arrow's
kernels from the tasks' parcels, with no Python object per event on the driver. The record
view (`to_run_result`) builds exactly what the serial runner returns, for small runs and for
checking every runner against the serial one.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.core.records import (
    APPLIED,
    DUPLICATE,
    REJECTED,
    Change,
    Duplicate,
    Event,
    Outcome,
    Rejection,
    Result,
    RunResult,
    record,
)
from ledger_engine.runtime.columnar.typed import values_of

STATUS = pa.dictionary(pa.int8(), pa.string())
OUTCOMES_SCHEMA = pa.schema(
    [("position", pa.int64()), ("request_id", pa.string()), ("status", pa.string())]
)
REJECTIONS_SCHEMA = pa.schema(
    [
        ("position", pa.int64()),
        ("stream", pa.string()),
        ("request_id", pa.string()),
        ("reason", pa.string()),
        ("detail", pa.string()),
        ("source_file", pa.string()),
        ("line_number", pa.int32()),
        ("raw", pa.binary()),
    ]
)


@dataclass(frozen=True)
class ColumnarRunResult:
    """What a run produced, as Arrow tables.

    - `outcomes`: every event's (position, request_id, status), by position; `request_id` is
      null where the event had no valid one.
    - `rejections`: (position, stream, request_id, reason, detail, and for an event read
      from a file its source_file, line_number and raw bytes), by position; `stream` and
      `request_id` null where they were not text.
    - `duplicates`: (position, stream, request_id, kind), by position.
    - `changes`: per table name, every row write: (position, seq, key, before, after), in no
      particular order (sort by position and seq for the serial order); keys and values
      typed as `columnar.typed` says. The request id is the outcome's at the position.
    - `results`: every emitted result: (position, seq, stream, payload as JSON, or
      `payload_pickle` where the payload is not a flat object), in no particular order.
    """

    outcomes: pa.Table
    rejections: pa.Table
    duplicates: pa.Table
    changes: dict[str, pa.Table]
    results: pa.Table

    @property
    def events(self) -> int:
        return len(self.outcomes)

    @property
    def applied_count(self) -> int:
        return int(pc.sum(pc.equal(self.outcomes.column("status"), APPLIED)).as_py() or 0)

    def to_run_result(
        self,
        ledger: StreamingLedger,
        events: Sequence[Event],
        start: Mapping[str, Mapping[Any, Any]],
    ) -> RunResult:
        """The record view: what `run_serial(ledger, events, start)` returns for the same run.
        `events` are the run's events in batch order (they give rejections and duplicates
        their stream and request id as given, text or not); `start` the state before it."""
        assert len(events) == self.events, "the events of this run"
        state = {name: dict(rows) for name, rows in start.items()}
        for name in ledger.tables:
            state.setdefault(name, {})
        result = RunResult(state=state)
        statuses = self.outcomes.column("status").to_pylist()
        reasons = _by_position(self.rejections, ("reason", "detail"))
        kinds = _by_position(self.duplicates, ("kind",))
        changes = _changes_by_position(ledger, self.changes)
        results = _results_by_position(self.results)
        for position, (event, status) in enumerate(zip(events, statuses, strict=True)):
            rid = event.request_id
            if status == APPLIED:
                for _, table, key, _, after in (found := changes.get(position, [])):
                    if after is None:
                        state[table].pop(key, None)
                    else:
                        state[table][key] = after
                result.changes.extend(record(Change, (rid, *c[1:])) for c in found)
                result.results.extend(
                    record(Result, (event.stream, rid, p)) for p in results.get(position, [])
                )
            elif status == REJECTED:
                reason, detail = reasons[position]
                result.rejections.append(Rejection(event.stream, rid, reason, detail))
            else:
                assert status == DUPLICATE, status
                result.duplicates.append(Duplicate(event.stream, rid, kinds[position][0]))
            result.outcomes.append(record(Outcome, (position, rid, status)))
        return result


def _by_position(table: pa.Table, columns: tuple[str, ...]) -> dict[int, tuple]:
    positions = table.column("position").to_pylist()
    values = [table.column(c).to_pylist() for c in columns]
    return {p: tuple(v[i] for v in values) for i, p in enumerate(positions)}


def _changes_by_position(
    ledger: StreamingLedger, changes: Mapping[str, pa.Table]
) -> dict[int, list[tuple]]:
    """position -> its changes (seq, table, key, before, after) in seq order."""
    found: dict[int, list[tuple]] = {}
    for name, table in changes.items():
        positions = table.column("position").to_pylist()
        seqs = table.column("seq").to_pylist()
        keys = table.column("key").to_pylist()
        befores = values_of(table.column("before"))
        afters = values_of(table.column("after"))
        for i, position in enumerate(positions):
            found.setdefault(position, []).append((seqs[i], name, keys[i], befores[i], afters[i]))
    for entries in found.values():
        entries.sort(key=lambda c: c[0])
    return found


def _results_by_position(results: pa.Table) -> dict[int, list[Any]]:
    found: dict[int, list[tuple[int, Any]]] = {}
    positions = results.column("position").to_pylist()
    seqs = results.column("seq").to_pylist()
    texts = results.column("payload").to_pylist()
    pickles = results.column("payload_pickle").to_pylist()
    for position, seq, text, pickled in zip(positions, seqs, texts, pickles, strict=True):
        payload = pickle.loads(pickled) if text is None else msgspec.json.decode(text)
        found.setdefault(position, []).append((seq, payload))
    return {
        p: [payload for _, payload in sorted(items, key=lambda x: x[0])]
        for p, items in found.items()
    }


def outcomes_table(
    count: int,
    applied: pa.Table,
    rejections: pa.Table,
    duplicates: pa.Table,
) -> pa.Table:
    """Every position's outcome: `applied` (position, request_id of executed transactions
    that committed), rejections and duplicates; each position exactly once."""
    position = np.concatenate(
        [
            applied.column("position").to_numpy(),
            rejections.column("position").to_numpy(),
            duplicates.column("position").to_numpy(),
        ]
    )
    assert len(position) == count, f"{len(position)} outcomes for {count} events"
    order = np.argsort(position, kind="stable")
    assert np.array_equal(position[order], np.arange(count)), "every position exactly once"
    ids = pa.chunked_array(
        [
            applied.column("request_id").combine_chunks(),
            rejections.column("request_id").combine_chunks(),
            duplicates.column("request_id").combine_chunks(),
        ],
        pa.string(),
    ).combine_chunks()
    status = pa.array(
        np.repeat(
            np.array([APPLIED, REJECTED, DUPLICATE], dtype=object),
            [len(applied), len(rejections), len(duplicates)],
        ),
        pa.string(),
    )
    order_array = pa.array(order)
    return pa.table(
        {
            "position": pa.array(np.arange(count, dtype=np.int64)),
            "request_id": ids.take(order_array),
            "status": status.take(order_array),
        },
        schema=OUTCOMES_SCHEMA,
    )
