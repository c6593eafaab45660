"""What a batch reads from the system of record while it runs, from Spark tasks or the driver:
rows by key, and the request ids earlier batches executed.

A batch's keys travel as one array value in PostgreSQL's input form, cast by the key type:
psycopg2 sends a list as `ARRAY[k1, k2, ...]`, an expression that PostgreSQL parses and plans
element by element (0.19-0.21 s against 0.13-0.14 s to read 9x10^4 rows by key).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg2
import pyarrow as pa
import pyarrow.compute as pc

from ledger_engine.core.declarations import Table
from ledger_engine.store.sql_files import identified, statement

_ROWS_BY_KEY = {str: "batch_reads/rows_by_text_key", int: "batch_reads/rows_by_int_key"}
_EXECUTED = statement("batch_reads/executed_requests")
_BY_KEY = statement("batch_reads/by_key")
EXECUTED_SCHEMA = pa.schema([("request_id", pa.string()), ("fingerprint", pa.string())])


def array_value(values: Sequence[str] | Sequence[int]) -> str:
    """`values` (text without NUL, or integers) in the input form of a PostgreSQL array: each
    text quoted, its `"` and `\\` escaped, so that any text, `NULL` and `{` included, is itself."""
    items = (
        str(v) if type(v) is int else '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        for v in values
    )
    return "{" + ",".join(items) + "}"


def text_array_value(texts: pa.Array) -> str:
    """`array_value` of a column of text (no nulls), built by Arrow's kernels: the driver
    never holds the batch's request ids as Python strings."""
    escaped = pc.replace_substring(pc.replace_substring(texts, "\\", "\\\\"), '"', '\\"')
    quoted = pc.binary_join_element_wise('"', escaped, '"', "")
    whole = pa.ListArray.from_arrays(pa.array([0, len(quoted)], pa.int32()), quoted)
    return "{" + pc.binary_join(whole, ",")[0].as_py() + "}"


@dataclass(frozen=True)
class CommittedRows:
    """The ledger tables' rows as the last committed batch left them, read by key over one
    read-only connection per task (a row source of the columnar engine:
    `ledger_engine.runtime.columnar.executing.RowSource`)."""

    dsn: str
    _conn: list = field(default_factory=list, compare=False, repr=False)

    def open(self) -> None:
        self._connection()

    def _connection(self) -> Any:
        if not self._conn:
            conn = psycopg2.connect(self.dsn)
            conn.set_session(readonly=True, autocommit=True)
            with conn.cursor() as cursor:
                cursor.execute(_BY_KEY)
            self._conn.append(conn)
        return self._conn[0]

    def read(self, round_: int, table: Table, keys: Sequence[Any]) -> dict[Any, Any]:
        """The committed values of `keys` of `table` (absent rows left out); every round of
        a batch reads the same values: rows an earlier round wrote travel with the batch."""
        with self._connection().cursor() as cursor:
            cursor.execute(
                identified(_ROWS_BY_KEY[table.key_type], table=table.sql_name),
                (array_value(keys),),
            )
            return dict(cursor.fetchall())

    def in_memory(self, table: Table) -> Mapping[Any, Any] | None:
        return None  # read in batches, by key

    def close(self) -> None:
        while self._conn:
            self._conn.pop().close()

    def __getstate__(self) -> dict[str, Any]:
        return {"dsn": self.dsn}

    def __setstate__(self, state: dict[str, Any]) -> None:
        object.__setattr__(self, "dsn", state["dsn"])
        object.__setattr__(self, "_conn", [])


def executed_requests(dsn: str, request_ids: pa.Array) -> pa.Table:
    """The (request_id, fingerprint) of those of `request_ids` (distinct) that committed
    batches executed: one query, an index probe per id into `ledger_requests`."""
    ids = pc.drop_null(request_ids)
    if not len(ids):
        return EXECUTED_SCHEMA.empty_table()
    conn = psycopg2.connect(dsn)
    try:
        conn.set_session(readonly=True, autocommit=True)
        with conn.cursor() as cursor:
            cursor.execute(_EXECUTED, (text_array_value(ids),))
            found = cursor.fetchall()
    finally:
        conn.close()
    return pa.table(
        {"request_id": [r for r, _ in found], "fingerprint": [f for _, f in found]},
        schema=EXECUTED_SCHEMA,
    )
