"""Executing one slot of a plan: a bin's transactions of one round, in batch order, to columns.

The slot's task receives its events (`routing.ROUTED_SCHEMA`, from every task that routed
some) and the rows earlier rounds handed on to it (`ROWS_SCHEMA`). It runs the events in batch
order (`ledger_engine.runtime.parallel.bins.execute_bin`) against those rows and the ones it
reads from the batch's row source, and writes what happened as columns (`SlotOutput`): each
event's outcome, each table's changes, the emitted results, the pending adds of deferred rows,
and the rows it hands on to later rounds.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec
import numpy as np
import pyarrow as pa

from ledger_engine.core.declarations import StreamingLedger, Table
from ledger_engine.core.records import Change, Rejection, record
from ledger_engine.core.storable import key_text
from ledger_engine.core.transaction import PendingAdd
from ledger_engine.runtime.columnar.carry import NO_CARRY
from ledger_engine.runtime.columnar.screening import event_of_record
from ledger_engine.runtime.columnar.typed import (
    key_array,
    key_type,
    value_array,
    value_type,
    values_of,
)
from ledger_engine.runtime.parallel.bins import BinRows, Executed, Runnable, execute_bin
from ledger_engine.runtime.parallel.plan import row_ids
from ledger_engine.runtime.parallel.settle import PROBE

PICKLE = pickle.HIGHEST_PROTOCOL
CHUNK = 4096
_JSON = msgspec.json.Encoder(order="sorted")  # events read from the source and executed at a time

OUTCOMES_SCHEMA = pa.schema(
    [
        ("position", pa.int64()),
        ("stream", pa.string()),
        ("request_id", pa.string()),
        ("reason", pa.string()),  # null: applied
        ("detail", pa.string()),
    ]
)
# A result's payload as JSON when it is a flat object (`_flat_json`), else pickled.
RESULTS_SCHEMA = pa.schema(
    [
        ("position", pa.int64()),
        ("seq", pa.int32()),
        ("stream", pa.string()),
        ("payload", pa.string()),
        ("payload_pickle", pa.binary()),
    ]
)
# A pending add of a deferred row (`seq` PROBE: a rejected transaction's probe). `delta`, `low`
# and `high` are null when one of them leaves int64; `wide` then holds all three as text.
PENDING_SCHEMA = pa.schema(
    [
        ("table", pa.int16()),
        ("key", pa.string()),
        ("position", pa.int64()),
        ("seq", pa.int32()),
        ("request_id", pa.string()),
        ("delta", pa.int64()),
        ("low", pa.int64()),
        ("high", pa.int64()),
        ("wide", pa.string()),
    ]
)
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def changes_schema(table: Table) -> pa.Schema:
    """The columns of one table's changes."""
    return pa.schema(
        [
            ("position", pa.int64()),
            ("seq", pa.int32()),
            ("key", key_type(table)),
            ("before", value_type(table)),
            ("after", value_type(table)),
        ]
    )


def rows_schema(table: Table) -> pa.Schema:
    """The columns of one table's rows handed on to a later round."""
    return pa.schema([("key", key_type(table)), ("value", value_type(table))])


class RowSource(Protocol):
    """Where a task reads the rows it was not handed: their values before the batch.
    Picklable; used inside tasks."""

    def open(self) -> None:
        """Get ready to read (at the start of every task)."""
        ...

    def read(self, round_: int, table: Table, keys: Sequence[Any]) -> dict[Any, Any]:
        """The values of `keys` of `table` before the batch (absent rows left out)."""
        ...

    def in_memory(self, table: Table) -> Mapping[Any, Any] | None:
        """The rows of `table` as a mapping to read one at a time, if they are in this
        process's memory; None if they must be read in batches (`read`)."""
        ...


_UNSEEN = object()


class _Overlay(dict):
    """A bin's rows of one table over an in-memory state: a row is read from `base` the
    first time a transaction asks for it (absent: None), and written here, never there.
    In place of fetching each chunk's rows up front: a dictionary lookup per row where the
    fetch costs a pass over every binding of every event."""

    __slots__ = ("base",)

    def __init__(self, base: Mapping[Any, Any]) -> None:
        super().__init__()
        self.base = base

    def get(self, key: Any, default: Any = None) -> Any:
        value = dict.get(self, key, _UNSEEN)
        if value is _UNSEEN:
            value = self[key] = self.base.get(key)
        return value

    def close(self) -> None:
        """Release what reading took (at the end of every task)."""
        ...


@dataclass
class SlotOutput:
    """What a slot's task produced, as columns."""

    outcomes: pa.Table
    changes: dict[int, pa.Table]  # by table index
    results: pa.Table
    pending: pa.Table
    handed: dict[int, dict[int, pa.Table]]  # destination slot -> table index -> rows
    events: int = 0


def execute_slot(
    ledger: StreamingLedger,
    routed: list[pa.Table],
    handed_in: Iterable[tuple[int, pa.Table]],
    source: RowSource,
    lap: Callable[[str], None] = lambda phase: None,
) -> SlotOutput:
    """Run a slot's events against the rows handed to it and those of `source`.

    `routed`: the slot's events in tables of `routing.ROUTED_SCHEMA` (each in batch order);
    `handed_in`: (table index, `rows_schema` table) pairs of rows earlier rounds handed on;
    `lap(phase)` is called at the end of each phase (for the task's profile).
    """
    tables = list(ledger.tables.values())
    bases = [source.in_memory(table) for table in tables]
    lap("state")
    lazy = all(base is not None for base in bases)
    rows: BinRows = (
        {t.name: _Overlay(base) for t, base in zip(tables, bases, strict=True)}  # type: ignore[arg-type]
        if lazy
        else {name: {} for name in ledger.tables}
    )
    for index, handed in handed_in:
        table = tables[index]
        rows[table.name].update(
            zip(
                handed.column("key").to_pylist(),
                values_of(handed.column("value")),
                strict=True,
            )
        )
    events = pa.concat_tables(list(routed)) if routed else None
    out = _Output(ledger)
    lap("rows handed on")
    if events is not None and len(events):
        events = events.take(
            pa.array(np.argsort(events.column("position").to_numpy(), kind="stable"))
        ).combine_chunks()
        streams = ledger.streams
        positions = events.column("position").to_pylist()
        deferred = events.column("deferred").to_pylist()
        carries = events.column("carry")
        blobs = events.column("event")
        lap("sort")
        for lo in range(0, len(positions), CHUNK):
            hi = min(lo + CHUNK, len(positions))
            runnables = []
            for i, blob in enumerate(blobs.slice(lo, hi - lo).to_pylist(), lo):
                event, keys = event_of_record(blob)
                assert keys is not None, "a runnable event carries its keys"
                runnables.append(
                    record(
                        Runnable, (positions[i], event, streams[event.stream], keys, deferred[i])
                    )
                )
            lap("decode")
            if not lazy:
                _read_missing(source, rows, runnables)
                lap("read rows")
            executed = list(execute_bin(rows, runnables))
            lap("execute")
            out.add(runnables, executed)
            out.carry(runnables, carries.slice(lo, hi - lo).to_pylist())
            lap("columns")
    finished = out.finish(rows)
    lap("finish")
    return finished


def _read_missing(source: RowSource, rows: BinRows, runnables: list[Runnable]) -> None:
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
        found = source.read(0, table, list(keys))
        delivered = rows[name]
        for key in keys:
            delivered[key] = found.get(key)


class _Output:
    """Builds a slot's columns as its transactions run: a tuple per outcome, change and
    result, turned into columns once at the end (`zip(*rows)` transposes in C)."""

    def __init__(self, ledger: StreamingLedger) -> None:
        self.tables = list(ledger.tables.values())
        self.index = {name: i for i, name in enumerate(ledger.tables)}
        self.outcomes: list[tuple] = []
        self.results: list[tuple] = []
        self.pending: list[tuple] = []
        self.changes: dict[str, list[tuple]] = {name: [] for name in ledger.tables}
        self.handoffs: dict[int, set[tuple[int, Any]]] = {}
        self.count = 0

    def add(self, runnables: list[Runnable], executed: list[Executed]) -> None:
        outcomes = self.outcomes.append
        results = self.results.append
        changes = {name: rows.append for name, rows in self.changes.items()}
        self.count += len(executed)
        for runnable, (position, outcome, probes) in zip(runnables, executed, strict=True):
            event = runnable.event
            if type(outcome) is Rejection:
                outcomes((position, event.stream, event.request_id, outcome.reason, outcome.detail))
            else:
                outcomes((position, event.stream, event.request_id, None, None))
                for seq, change in enumerate(outcome.changes):
                    if type(change) is Change:
                        changes[change[1]]((position, seq, change))
                    else:
                        self._pending(position, seq, change)
                for seq, result in enumerate(outcome.results):
                    results((position, seq, result))
            for probe in probes:
                self._pending(position, PROBE, probe)

    def _pending(self, position: int, seq: int, add: PendingAdd) -> None:
        numbers = (add.delta, add.low, add.high)
        if all(INT64_MIN <= n <= INT64_MAX for n in numbers):
            wide = None
        else:
            numbers, wide = (None, None, None), ",".join(str(n) for n in numbers)
        self.pending.append(
            (
                self.index[add.table],
                key_text(add.key),
                position,
                seq,
                add.request_id,
                *numbers,
                wide,
            )
        )

    def carry(self, runnables: list[Runnable], carries: list[list[int]]) -> None:
        """Note the rows these events hand on after the round (their values are read at the
        task's end: no later event of the slot touches them)."""
        for runnable, carry in zip(runnables, carries, strict=True):
            for binding, key, slot in zip(
                runnable.stream.bindings, runnable.keys, carry, strict=True
            ):
                if slot != NO_CARRY:
                    self.handoffs.setdefault(slot, set()).add((self.index[binding.table.name], key))

    def finish(self, rows: BinRows) -> SlotOutput:
        changes = {}
        for name, entries in self.changes.items():
            if entries:
                table = self.tables[self.index[name]]
                position, seq, change = zip(*entries, strict=True)
                _, _, key, before, after = zip(*change, strict=True)
                changes[self.index[name]] = pa.table(
                    [
                        pa.array(position, pa.int64()),
                        pa.array(seq, pa.int32()),
                        key_array(table, key),
                        value_array(table, before),
                        value_array(table, after),
                    ],
                    schema=changes_schema(table),
                )
        results = RESULTS_SCHEMA.empty_table()
        if self.results:
            position, seq, result = zip(*self.results, strict=True)
            stream, _, payload = zip(*result, strict=True)
            texts = [_flat_json(p) for p in payload]
            results = pa.table(
                [
                    pa.array(position, pa.int64()),
                    pa.array(seq, pa.int32()),
                    pa.array(stream, pa.string()),
                    pa.array(texts, pa.string()),
                    pa.array(
                        [
                            None if text is not None else pickle.dumps(p, PICKLE)
                            for p, text in zip(payload, texts, strict=True)
                        ],
                        pa.binary(),
                    ),
                ],
                schema=RESULTS_SCHEMA,
            )
        handed: dict[int, dict[int, pa.Table]] = {}
        for slot, entries in self.handoffs.items():
            by_table: dict[int, list[Any]] = {}
            for index, key in entries:
                by_table.setdefault(index, []).append(key)
            handed[slot] = {}
            for index, keys in by_table.items():
                table = self.tables[index]
                values = [rows[table.name][key] for key in keys]
                handed[slot][index] = pa.table(
                    {"key": key_array(table, keys), "value": value_array(table, values)},
                    schema=rows_schema(table),
                )
        return SlotOutput(
            _table(self.outcomes, OUTCOMES_SCHEMA),
            changes,
            results,
            _table(self.pending, PENDING_SCHEMA),
            handed,
            self.count,
        )


def _flat_json(payload: Any) -> str | None:
    """A flat object of text, integers, booleans and nulls as JSON (it decodes to an equal
    object), else None: then it is pickled."""
    if type(payload) is not dict:
        return None
    for key, value in payload.items():
        kind = type(value)
        if type(key) is not str or not (
            kind is str or kind is int or kind is bool or value is None
        ):
            return None
    try:
        return _JSON.encode(payload).decode()
    except (OverflowError, UnicodeError, msgspec.EncodeError):  # an int beyond 64 bits, say
        return None


def _table(rows: list[tuple], schema: pa.Schema) -> pa.Table:
    """A table of `schema` from row tuples."""
    if not rows:
        return schema.empty_table()
    columns = zip(*rows, strict=True)
    return pa.table(
        [pa.array(c, f.type) for c, f in zip(columns, schema, strict=True)], schema=schema
    )


def settle_partition(pending: pa.Table, partitions: int) -> np.ndarray:
    """The settling partition of each pending add: by its row, so that one task settles all
    of a row's adds."""
    if not len(pending):
        return np.zeros(0, dtype=np.int64)
    ids = row_ids(pending.column("table").to_pylist(), pending.column("key").to_pylist())
    return np.mod(ids, partitions)
