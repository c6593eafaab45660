"""A declared table's keys and values as Arrow columns of their own type.

Keys: `int64` for an int-keyed table, `string` for a text-keyed one. Values: `int64` for a
table of integers, `string` for text, and for any other value type a pickle (`binary`), which
gives back exactly the object the transaction wrote (a tuple stays a tuple). Null is an absent
row.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from ledger_engine.core.declarations import Table

PICKLE = pickle.HIGHEST_PROTOCOL


def key_type(table: Table) -> pa.DataType:
    """The Arrow type of `table`'s keys."""
    return pa.int64() if table.key_type is int else pa.string()


def value_type(table: Table) -> pa.DataType:
    """The Arrow type of `table`'s values."""
    if table.value_type is int:
        return pa.int64()
    if table.value_type is str:
        return pa.string()
    return pa.binary()


def value_array(table: Table, values: Sequence[Any]) -> pa.Array:
    """`values` of `table` (None for an absent row) as a column."""
    kind = value_type(table)
    if kind == pa.binary():
        values = [None if v is None else pickle.dumps(v, PICKLE) for v in values]
    return pa.array(values, kind)


def values_of(column: pa.Array | pa.ChunkedArray) -> list[Any]:
    """The Python values of a column `value_array` made."""
    values = column.to_pylist()
    if column.type == pa.binary():
        return [None if v is None else pickle.loads(v) for v in values]
    return values


def key_array(table: Table, keys: Sequence[Any]) -> pa.Array:
    """`keys` of `table` as a column."""
    return pa.array(keys, key_type(table))
