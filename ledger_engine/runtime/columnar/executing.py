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
from dataclasses import dataclass, field
from itertools import chain, filterfalse
from operator import itemgetter
from typing import Any, Protocol

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ledger_engine.core.declarations import Stream, StreamingLedger, Table
from ledger_engine.core.records import Change, Rejection, record
from ledger_engine.core.storable import key_text
from ledger_engine.core.transaction import Applied, PendingAdd
from ledger_engine.runtime.columnar import parcels as P
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
# Events read from the source and executed at a time. Small enough that a chunk's objects
# (events, rows read, changes, results) are still in the core's cache when its columns are
# built: one slot of 2.5x10^5 transfers in one process, 4096 -> 1024 events a chunk, 30.8-32.1
# -> 27.4-28.0 us per event (decode 2.95 -> 2.2, execute 15.0 -> 12.9, columns 7.0 -> 6.1); a
# source read in batches (PostgreSQL) then answers four times as many smaller reads.
CHUNK = 1024
_JSON = msgspec.json.Encoder(order="sorted")
_JSON_DECODE = msgspec.json.Decoder().decode

OUTCOMES_SCHEMA = pa.schema(
    [
        ("position", pa.int64()),
        ("stream", pa.string()),
        ("request_id", pa.string()),
        ("reason", pa.string()),  # null: applied
        ("detail", pa.string()),
    ]
)
# (An applied transaction's stream and request id are null: the driver has them.)
# A result's payload as JSON where that decodes back to an equal value (`_json_texts`),
# else pickled.
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
        process's memory; None if they must be read in batches (`read`). Asked for every
        chunk of events that reads the table: cheap after the first call."""
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
    # The slot's events: their positions (sorted) and request ids, for its journal.
    positions: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    request_ids: list[str] = field(default_factory=list)


def execute_slot(
    ledger: StreamingLedger,
    routed: list[pa.Table],
    handed_in: Iterable[tuple[int, pa.Table]],
    source: RowSource,
    lap: Callable[[str], None] = lambda phase: None,
    chunk: int = CHUNK,
) -> SlotOutput:
    """Run a slot's events against the rows handed to it and those of `source`.

    `routed`: the slot's events in tables of `routing.ROUTED_SCHEMA` (each in batch order);
    `handed_in`: (table index, `rows_schema` table) pairs of rows earlier rounds handed on;
    `lap(phase)` is called at the end of each phase (for the task's profile); `chunk`: how
    many events are read and executed at a time (the output is the same for any).
    """
    assert chunk >= 1, chunk
    tables = list(ledger.tables.values())
    rows: BinRows = {name: {} for name in ledger.tables}
    for index, handed in handed_in:
        table = tables[index]
        rows[table.name].update(
            zip(
                handed.column("key").to_pylist(),
                values_of(handed.column("value")),
                strict=True,
            )
        )
    events = _in_batch_order(routed)
    out = _Output(ledger)
    request_ids: list[str] = []
    positions: list[int] = []
    lap("rows handed on")
    if events is not None:
        streams = ledger.streams
        positions = events.column("position").to_pylist()
        deferred = events.column("deferred").to_pylist()
        carries = events.column("carry")
        blobs = events.column("event")
        lap("sort")
        for lo in range(0, len(positions), chunk):
            hi = min(lo + chunk, len(positions))
            runnables = []
            for i, blob in enumerate(blobs.slice(lo, hi - lo).to_pylist(), lo):
                event, keys = event_of_record(blob)
                assert keys is not None, "a runnable event carries its keys"
                request_ids.append(event.request_id)
                runnables.append(
                    record(
                        Runnable, (positions[i], event, streams[event.stream], keys, deferred[i])
                    )
                )
            lap("decode")
            _read_missing(source, tables, rows, runnables)
            lap("read rows")
            executed = list(execute_bin(rows, runnables))
            lap("execute")
            out.add(runnables, executed)
            out.carry(runnables, carries.slice(lo, hi - lo))
            lap("columns")
    finished = out.finish(rows)
    finished.positions = np.asarray(positions, np.int64)
    finished.request_ids = request_ids
    lap("finish")
    return finished


def _in_batch_order(routed: list[pa.Table]) -> pa.Table | None:
    """The slot's routed events (`routing.ROUTED_SCHEMA`) joined in batch order, without
    copying them where it can; None when there are none.

    Each routed table is one unit's events for the slot, in order, and units hold disjoint
    ranges of positions: put in order of their first positions, the tables are joined as
    they are (sorting and copying every event's record cost 1.2 s per 10^6 events).
    """
    tables = P.in_first_order(routed, "position")
    if not tables:
        return None
    events = pa.concat_tables(tables)
    position = events.column("position").to_numpy()
    assert np.all(position[1:] > position[:-1]), "routed tables of disjoint units, each in order"
    return events


def _read_missing(
    source: RowSource,
    tables: Sequence[Table],
    rows: BinRows,
    runnables: list[Runnable],
) -> None:
    """Read the rows `runnables` touch that `rows` lacks (absent rows become `None`): from
    the source's mapping where a table is in memory, else by `source.read`. A table is asked
    for only once it is read (building an in-memory table's mapping costs about 0.15 s per
    10^6 rows, and a slot without events, or whose streams skip a table, never needs it).

    The keys are gathered a binding at a time (`_bound_keys`) and looked up in C
    (`filterfalse`, `map`): a Python call per row cost as much as the transaction's own reads.
    A deferred row may be read too: its transactions never read it, so it goes unused.
    """
    wanted = _bound_keys(runnables)
    for table in tables:
        delivered = rows[table.name]
        # Not `keys - delivered.keys()`: that walks every row delivered so far.
        missing = list(filterfalse(delivered.__contains__, wanted.get(table.name, ())))
        if not missing:
            continue
        base = source.in_memory(table)
        if base is not None:
            delivered.update(zip(missing, map(base.get, missing), strict=True))
        else:
            delivered.update(dict.fromkeys(missing))
            delivered.update(source.read(0, table, missing))


_POSITION, _STREAM, _KEYS = itemgetter(0), itemgetter(2), itemgetter(3)  # of a `Runnable`
_CHANGES, _RESULTS = itemgetter(0), itemgetter(1)  # of an `Applied`


def _bound_keys(runnables: list[Runnable]) -> dict[str, set[Any]]:
    """The keys `runnables` bind, per table name: one slice of their keys per binding."""
    found: dict[str, set[Any]] = {}
    # Streams by identity: a stream's own hash walks its declaration.
    if len(set(map(id, map(_STREAM, runnables)))) == 1:
        groups = [(runnables[0].stream, runnables)] if runnables else []
    else:
        by_stream: dict[int, tuple[Stream, list[Runnable]]] = {}
        for runnable in runnables:
            by_stream.setdefault(id(runnable.stream), (runnable.stream, []))[1].append(runnable)
        groups = list(by_stream.values())
    for stream, mine in groups:
        flat = list(chain.from_iterable(map(_KEYS, mine)))
        width = len(stream.bindings)
        for i, binding in enumerate(stream.bindings):
            found.setdefault(binding.table.name, set()).update(flat[i::width])
    return found


class _Output:
    """Builds a slot's columns as its transactions run, a chunk of transactions at a time.

    Per transaction it keeps only what it was given: the `Applied` of a transaction with no
    deferred row (the common case) is kept whole, and after each chunk its changes and
    results are flattened and transposed in C (`chain`, `zip`), their positions and sequence
    numbers made with NumPy from the counts. Rejections, and transactions that added to a
    deferred row (their changes mix `Change` and `PendingAdd`), take the per-change path.
    """

    def __init__(self, ledger: StreamingLedger) -> None:
        self.tables = list(ledger.tables.values())
        self.index = {name: i for i, name in enumerate(ledger.tables)}
        self.executed: list[int] = []  # every position run
        self.rejected: list[tuple] = []  # OUTCOMES_SCHEMA rows
        self.applied: list[Applied] = []  # of transactions without a deferred row
        self.applied_at: list[int] = []
        self.changes: dict[str, list[tuple]] = {name: [] for name in ledger.tables}
        self.results: list[tuple] = []  # (position, seq, result) off the common path
        self.pending: list[tuple] = []
        # Per destination slot and table index, the keys handed on (repeats kept until
        # `_handed`), gathered a chunk at a time.
        self.handoffs: dict[int, dict[int, list[Any]]] = {}
        # Per stream (by identity), its bindings' table indexes.
        self.binding_tables: dict[int, tuple[int, ...]] = {}
        self.change_parts: dict[int, list[pa.Table]] = {}
        self.result_parts: list[pa.Table] = []

    def add(self, runnables: list[Runnable], executed: list[Executed]) -> None:
        rejected = self.rejected.append
        applied, applied_at = self.applied.append, self.applied_at.append
        self.executed.extend(map(_POSITION, executed))
        for runnable, (position, outcome, probes) in zip(runnables, executed, strict=True):
            if type(outcome) is Rejection:
                event = runnable.event
                rejected((position, event.stream, event.request_id, outcome.reason, outcome.detail))
            elif runnable.deferred:
                self._irregular(position, outcome)
            else:
                applied(outcome)
                applied_at(position)
            for probe in probes:
                self._pending(position, PROBE, probe)
        self._flush()

    def _flush(self) -> None:
        """Turn the changes and results kept so far into columns and let their objects go:
        a slot holds columns, not a `Change` per row it wrote (the time is the same as
        turning them all into columns at the end, measured at 5x10^5 events)."""
        for index, table in self._changes():
            self.change_parts.setdefault(index, []).append(table)
        results = self._results()
        if len(results):
            self.result_parts.append(results)
        self.applied.clear()
        self.applied_at.clear()
        self.results.clear()
        for entries in self.changes.values():
            entries.clear()

    def _irregular(self, position: int, outcome: Applied) -> None:
        for seq, change in enumerate(outcome.changes):
            if type(change) is Change:
                self.changes[change[1]].append((position, seq, change))
            else:
                self._pending(position, seq, change)
        for seq, result in enumerate(outcome.results):
            self.results.append((position, seq, result))

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

    def carry(self, runnables: list[Runnable], carries: pa.ChunkedArray) -> None:
        """Note the rows these events hand on after the round (their values are read at the
        task's end: no later event of the slot touches them).

        `carries` holds, per event, one destination per binding (`NO_CARRY`: none), so its
        values line up with the events' keys flattened: the accesses handed on are found
        and grouped by (destination, table) with array operations, and only their keys are
        picked out in Python (a third of the accesses of a round 0 at 10^6 transfers)."""
        destination = pc.list_flatten(carries).to_numpy()
        marked = np.flatnonzero(destination != NO_CARRY)
        if not len(marked):
            return
        keys = list(chain.from_iterable(map(_KEYS, runnables)))
        tables = np.fromiter(
            chain.from_iterable(map(self._binding_tables, map(_STREAM, runnables))),
            np.int64,
            len(keys),
        )
        assert len(keys) == len(destination), "a destination per binding"
        slot, table = destination[marked].astype(np.int64), tables[marked]
        order = np.lexsort((table, slot))
        marked, slot, table = marked[order], slot[order], table[order]
        picked = [keys[i] for i in marked.tolist()]
        bounds = np.flatnonzero(np.diff(slot) | np.diff(table)) + 1
        starts, ends = np.r_[0, bounds].tolist(), np.r_[bounds, len(slot)].tolist()
        for lo, hi in zip(starts, ends, strict=True):
            handed = self.handoffs.setdefault(int(slot[lo]), {})
            handed.setdefault(int(table[lo]), []).extend(picked[lo:hi])

    def _binding_tables(self, stream: Stream) -> tuple[int, ...]:
        found = self.binding_tables.get(id(stream))
        if found is None:
            found = self.binding_tables[id(stream)] = tuple(
                self.index[b.table.name] for b in stream.bindings
            )
        return found

    def finish(self, rows: BinRows) -> SlotOutput:
        """The slot's columns, each table in one chunk: a parcel holds a record batch per
        chunk, and a few hundred small ones (a chunk's each) compressed worse and cost the
        task more to seal than one copy into a single chunk."""
        self._flush()
        return SlotOutput(
            self._outcomes(),
            {
                index: pa.concat_tables(parts).combine_chunks()
                for index, parts in self.change_parts.items()
            },
            P.concatenated(self.result_parts, RESULTS_SCHEMA).combine_chunks(),
            _table(self.pending, PENDING_SCHEMA),
            self._handed(rows),
            len(self.executed),
        )

    def _outcomes(self) -> pa.Table:
        """A row per position run: the rejections in full; the applied ones by position
        alone (the driver has their request ids)."""
        rejected = _table(self.rejected, OUTCOMES_SCHEMA)
        applied = np.setdiff1d(
            np.asarray(self.executed, np.int64), rejected.column("position").to_numpy()
        )
        nulls = pa.nulls(len(applied), pa.string())
        return pa.concat_tables(
            [
                pa.table([pa.array(applied), nulls, nulls, nulls, nulls], schema=OUTCOMES_SCHEMA),
                rejected,
            ]
        )

    def _changes(self) -> list[tuple[int, pa.Table]]:
        """The changes kept so far, as (table index, columns)."""
        parts: list[tuple[int, pa.Table]] = []
        lists = list(map(_CHANGES, self.applied))
        flat = list(chain.from_iterable(lists))
        if flat:
            position, seq = _numbered(self.applied_at, lists)
            _, names, *columns = zip(*flat, strict=True)
            code = np.fromiter(map(self.index.__getitem__, names), np.int64, len(names))
            order = np.argsort(code, kind="stable")
            code = code[order]
            position, seq = position[order], seq[order]
            keys, befores, afters = (np.fromiter(c, object, len(c))[order] for c in columns)
            bounds = np.flatnonzero(np.diff(code)) + 1
            for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(code)], strict=True):
                index = int(code[lo])
                parts.append(
                    (
                        index,
                        _changes_table(
                            self.tables[index],
                            position[lo:hi],
                            seq[lo:hi],
                            keys[lo:hi],
                            befores[lo:hi],
                            afters[lo:hi],
                        ),
                    )
                )
        for name, entries in self.changes.items():
            if entries:
                index = self.index[name]
                position, seq, change = zip(*entries, strict=True)
                _, _, key, before, after = zip(*change, strict=True)
                parts.append(
                    (index, _changes_table(self.tables[index], position, seq, key, before, after))
                )
        return parts

    def _results(self) -> pa.Table:
        """The results kept so far, as columns."""
        lists = list(map(_RESULTS, self.applied))
        flat = list(chain.from_iterable(lists))
        position: Sequence[int] | np.ndarray
        if self.results:
            at, numbered, extra = zip(*self.results, strict=True)
            regular = _numbered(self.applied_at, lists)
            position = np.concatenate([regular[0], np.asarray(at, np.int64)])
            seq = np.concatenate([regular[1], np.asarray(numbered, np.int64)])
            flat.extend(extra)
        elif flat:
            position, seq = _numbered(self.applied_at, lists)
        else:
            return RESULTS_SCHEMA.empty_table()
        stream, _, payload = zip(*flat, strict=True)
        texts = _json_texts(payload)
        return pa.table(
            [
                pa.array(position, pa.int64()),
                pa.array(seq, pa.int32()),
                pa.array(stream, pa.string()),
                pa.array(texts, pa.binary()).cast(pa.string()),
                pa.array(
                    [
                        None if text is not None else pickle.dumps(p, PICKLE)
                        for p, text in zip(payload, texts, strict=True)
                    ]
                    if None in texts
                    else pa.nulls(len(texts), pa.binary()),
                    pa.binary(),
                ),
            ],
            schema=RESULTS_SCHEMA,
        )

    def _handed(self, rows: BinRows) -> dict[int, dict[int, pa.Table]]:
        handed: dict[int, dict[int, pa.Table]] = {}
        for slot, by_table in self.handoffs.items():
            handed[slot] = {}
            for index, repeated in by_table.items():
                table = self.tables[index]
                keys = list(dict.fromkeys(repeated))  # once each, in a deterministic order
                values = list(map(rows[table.name].__getitem__, keys))
                handed[slot][index] = pa.table(
                    {"key": key_array(table, keys), "value": value_array(table, values)},
                    schema=rows_schema(table),
                )
        return handed


def _numbered(positions: list[int], lists: list[tuple]) -> tuple[np.ndarray, np.ndarray]:
    """The (position, seq) of each item of `lists` flattened, `lists[i]` at `positions[i]`."""
    counts = np.fromiter(map(len, lists), np.int64, len(lists))
    starts = np.cumsum(counts) - counts
    position = np.repeat(np.asarray(positions, np.int64), counts)
    seq = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(starts, counts)
    return position, seq


def _changes_table(
    table: Table,
    position: Sequence[int] | np.ndarray,
    seq: Sequence[int] | np.ndarray,
    key: Sequence[Any],
    before: Sequence[Any],
    after: Sequence[Any],
) -> pa.Table:
    return pa.table(
        [
            pa.array(position, pa.int64()),
            pa.array(seq, pa.int32()),
            key_array(table, key),
            value_array(table, before),
            value_array(table, after),
        ],
        schema=changes_schema(table),
    )


def _json_texts(payloads: Sequence[Any]) -> list[bytes | None]:
    """Each result payload as JSON text that decodes to an equal value, or None where none
    does (a tuple, a float that is not finite, an integer beyond 64 bits: then it is
    pickled). Encoded, decoded and compared for all of them at once, in C; one at a time
    only when that finds one that does not come back equal."""
    try:
        texts: list[bytes | None] = list(map(_JSON.encode, payloads))
    except (OverflowError, UnicodeError, TypeError, msgspec.EncodeError):
        pass
    else:
        if _JSON_DECODE(b"[" + b",".join(texts) + b"]") == list(payloads):  # type: ignore[arg-type]
            return texts
    return [_json_text(p) for p in payloads]


def _json_text(payload: Any) -> bytes | None:
    try:
        text = _JSON.encode(payload)
    except (OverflowError, UnicodeError, TypeError, msgspec.EncodeError):
        return None
    return text if _JSON_DECODE(text) == payload else None


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
