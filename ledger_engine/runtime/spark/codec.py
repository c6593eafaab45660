"""How the engine's values cross Spark: the Arrow schemas of a batch's records, and codecs.

Keys travel as text (an int key as its decimal digits) next to the index of their table, so
that Spark can join and partition on them. Values travel typed: `value_int` for int tables,
`value_str` for str tables, `value_obj` (a pickle) for dict tables; all three null means the row
is absent. Events and transaction outcomes travel as pickles of plain tuples, which load an
order of magnitude faster than pickles of dataclass instances
(`ledger_engine.runtime.parallel.assemble`).
"""

from __future__ import annotations

import pickle
from typing import Any

import pyarrow as pa

from ledger_engine.core.declarations import StreamingLedger, Table
from ledger_engine.core.records import Event

PICKLE = pickle.HIGHEST_PROTOCOL

# -- Arrow types and the Spark DDL of every record kind --------------------------------------

_LINE_FIELDS = [
    ("position", pa.int64()),
    # pickled (stream, request_id, payload, keys): keys resolved for an event that runs, else
    # None; null if the line held no event at all
    ("event", pa.binary()),
    ("source_file", pa.string()),
    ("line_number", pa.int32()),
    ("raw", pa.binary()),
]

# Each binding's row, as four lists of equal length (empty for an event that does not run).
ACCESS_FIELDS = [
    ("acc_table", pa.list_(pa.int16())),
    ("acc_key", pa.list_(pa.string())),
    ("acc_row", pa.list_(pa.int64())),
    ("acc_flags", pa.list_(pa.int8())),
]

SCREENED = pa.schema(
    [
        *_LINE_FIELDS,
        ("request_id", pa.string()),  # null: no valid request id
        ("fingerprint", pa.string()),
        ("runs", pa.bool_()),  # passed every check (it still may be a duplicate)
        ("reason", pa.string()),
        ("detail", pa.string()),
        *ACCESS_FIELDS,
    ]
)

ROW_VALUE = [("value_int", pa.int64()), ("value_str", pa.string()), ("value_obj", pa.binary())]

NEED = pa.schema(
    [
        ("round", pa.int32()),
        ("bin", pa.int32()),
        ("table", pa.int16()),
        ("key", pa.string()),
        ("deferred", pa.bool_()),
    ]
)

# What an executing task receives: events (kind 1) and rows written by earlier rounds (kind 0).
WORK = pa.schema(
    [
        ("kind", pa.int8()),
        ("bin", pa.int32()),
        ("route", pa.int64()),
        ("deferred", pa.int64()),  # bitmask of the bindings whose rows are deferred
        ("position", pa.int64()),
        ("table", pa.int16()),
        ("key", pa.string()),
        *ROW_VALUE,
        ("event", pa.binary()),
        ("source_file", pa.string()),
        ("line_number", pa.int32()),
        ("raw", pa.binary()),
        ("fingerprint", pa.string()),
    ]
)

# What an executing or settling task emits: one record type per `tag`.
OUTPUT = pa.schema(
    [
        ("tag", pa.int8()),
        ("table", pa.int16()),
        ("key", pa.string()),
        ("position", pa.int64()),
        ("seq", pa.int32()),
        *ROW_VALUE,
        ("blob", pa.binary()),
    ]
)
OUTCOMES, PENDING, NET, SETTLED, OVERFLOW, SUMMARY, PROFILE = range(7)


def spark_ddl(schema: pa.Schema) -> str:
    """The Spark DDL string of an Arrow schema (for `mapInArrow`)."""
    return ", ".join(f"`{field.name}` {_ddl(field.type)}" for field in schema)


def _ddl(kind: pa.DataType) -> str:
    simple = {
        pa.int8(): "tinyint",
        pa.int16(): "smallint",
        pa.int32(): "int",
        pa.int64(): "bigint",
        pa.bool_(): "boolean",
        pa.string(): "string",
        pa.binary(): "binary",
    }
    if kind in simple:
        return simple[kind]
    if pa.types.is_list(kind):
        return f"array<{_ddl(kind.value_type)}>"
    if pa.types.is_struct(kind):
        inner = ", ".join(f"`{f.name}`: {_ddl(f.type)}" for f in kind)
        return f"struct<{inner}>"
    raise TypeError(f"no Spark type for {kind}")


def batch_of(schema: pa.Schema, columns: dict[str, list]) -> pa.RecordBatch:
    """A record batch of `schema` from equally long columns (Python lists, NumPy or Arrow
    arrays; missing columns are null)."""
    length = max((len(v) for v in columns.values()), default=0)
    arrays = [
        _array(columns[f.name], f.type) if f.name in columns else pa.nulls(length, f.type)
        for f in schema
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _array(values: Any, kind: pa.DataType) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array):
        return values if values.type == kind else values.cast(kind)
    return pa.array(values, type=kind)


# -- keys and values -------------------------------------------------------------------------


def key_of(table: Table, text: str) -> Any:
    return int(text) if table.key_type is int else text


def value_columns(table: Table, value: Any) -> tuple[int | None, str | None, bytes | None]:
    if value is None:
        return None, None, None
    if table.value_type is int:
        return value, None, None
    if table.value_type is str:
        return None, value, None
    return None, None, pickle.dumps(value, PICKLE)


def value_of(table: Table, value_int: Any, value_str: Any, value_obj: Any) -> Any:
    if table.value_type is int:
        return value_int
    if table.value_type is str:
        return value_str
    return None if value_obj is None else pickle.loads(value_obj)


def tables_by_index(ledger: StreamingLedger) -> list[Table]:
    """The ledger's tables in declaration order: index `i` is table number `i`."""
    return list(ledger.tables.values())


# -- events ----------------------------------------------------------------------------------


def event_blob(event: Event, keys: tuple[Any, ...] | None) -> bytes:
    return pickle.dumps((event.stream, event.request_id, event.payload, keys), PICKLE)


def event_of(blob: bytes) -> tuple[Event, tuple[Any, ...] | None]:
    stream, request_id, payload, keys = pickle.loads(blob)
    return Event(stream, request_id, payload), keys


def list_array(offsets: list[int], values: list, kind: pa.DataType) -> pa.Array:
    """A list array from flat values and the offsets where each list starts (plus the end)."""
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(values, kind))
