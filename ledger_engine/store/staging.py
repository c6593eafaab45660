"""A batch's journal, written by many Spark tasks at once and stored once by the commit.

Each task encodes its part of the batch's journal (events, changes, results, rejections,
duplicates, executed request ids) as CSV in the column order of the ledger tables and hands
it to the driver in its report (`JournalPart`); the batch's commit (`ledger_engine.store.commit`)
COPYs every part straight into the ledger tables, in its one transaction, so each journal row
is written once. A task that Spark runs again replaces its earlier report.

What a later round of the same batch reads (the net change of each row an earlier round
wrote) is working state, not journal: tasks stage it in `ledger_stage_rows` (`sql/0004`) over
a connection of their own, in one transaction, under their *slot* (which task of which stage
they are), first deleting whatever the slot already holds. The same transaction checks the
run's lease, so that a task of a run that lost it hands over nothing.

The `*_row` functions say what the system of record keeps about an outcome; they are the one
place where engine values become column values.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg2
import pyarrow as pa
from psycopg2 import sql
from pyarrow import csv

from ledger_engine.core.admission import valid_request_id
from ledger_engine.core.records import (
    Change,
    Event,
    Result,
    canonical_json,
    plain_canonical_bytes,
)
from ledger_engine.core.storable import json_problem, key_text, plain_json, storable_text
from ledger_engine.store.lease import check_fence
from ledger_engine.store.sql_files import statement

# The journal's tables and the columns a task writes of each (after `batch_id`), in order.
JOURNAL_COLUMNS: dict[str, tuple[str, ...]] = {
    "ledger_events": (
        "position",
        "source_file",
        "line_number",
        "stream",
        "request_id",
        "payload",
        "outcome",
    ),
    "ledger_change_log": (
        "position",
        "seq",
        "request_id",
        "table_name",
        "key",
        "before",
        "after",
    ),
    "ledger_results": ("position", "seq", "stream", "request_id", "payload"),
    "ledger_rejections": (
        "position",
        "stream",
        "request_id",
        "reason",
        "detail",
        "raw_input",
    ),
    "ledger_duplicates": ("position", "stream", "request_id", "kind"),
    "ledger_requests": ("request_id", "position", "fingerprint", "outcome"),
}
# The working state a later round reads, and its columns (after `batch_id` and `slot`).
STAGED_ROWS = "ledger_stage_rows"
STAGED_ROW_COLUMNS = ("table_name", "key", "round", "before", "after")


_PACKING = "zstd"  # how a journal part's CSV travels to the driver

_CLEAR_SLOT = statement("staging/clear_slot")
_CLEAR_BATCH = statement("staging/clear_batch")
_CLEAR_ALL = statement("staging/clear_all")


@dataclass(frozen=True)
class JournalPart:
    """One task's share of a batch's journal: per ledger table, its rows as CSV (`batch_id`
    first, then `JOURNAL_COLUMNS`' columns), packed, and how many rows that CSV holds.

    The CSV travels packed (zstd): about 90 MB per 10^5 transfers would otherwise pass
    through Spark's cache and the JVM to the driver, which costs more than the packing.
    """

    slot: str
    packed: Mapping[str, tuple[int, bytes]]  # table -> (size of the CSV, the CSV packed)
    rows: Mapping[str, int]

    @classmethod
    def of(cls, slot: str, csv: Mapping[str, bytes], rows: Mapping[str, int]) -> JournalPart:
        """The part holding `csv` (table -> CSV) and the row counts its task reports."""
        return cls(slot, {table: packed(data) for table, data in csv.items()}, dict(rows))

    def csv(self, table: str) -> bytes | None:
        """The CSV of `table`, or None if the task wrote none of its rows."""
        if table not in self.packed:
            return None
        size, data = self.packed[table]
        return pa.decompress(data, size, _PACKING, asbytes=True)

    @property
    def stage(self) -> str:
        """The stage of the task (`round0`, `settle`, `admission`): the slot without its task."""
        return self.slot.split(":", 1)[0]


def packed(data: bytes) -> tuple[int, bytes]:
    """CSV packed as a `JournalPart` holds it: (its size, the packed bytes)."""
    return len(data), pa.compress(data, _PACKING, asbytes=True)


# -- column values -------------------------------------------------------------------------


def clean_text(value: Any) -> str | None:
    """A text column's value: a string PostgreSQL can store, otherwise NULL (a rejected
    line's raw bytes are kept in `ledger_rejections.raw_input`)."""
    if value is None:
        return None
    if not isinstance(value, str):
        value = canonical_json(value) if json_problem(value, "") is None else repr(value)
    return value if storable_text(value) else None


def request_id_of(value: Any) -> str | None:
    """A valid request id, or NULL: an invalid one takes no id (its raw line is kept)."""
    return value if valid_request_id(value) else None


def readable(detail: str) -> str:
    """Free text made storable: NUL and lone surrogates escaped."""
    return detail.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")


def json_of(value: Any) -> str | None:
    """A value as JSON text for a jsonb column."""
    if value is None:
        return None
    if type(value) is int:  # the common case: a balance
        return str(value)
    return _canonical_text(value)


def result_row(position: int, seq: int, result: Result) -> tuple[Any, ...]:
    """A `ledger_results` row. A result's payload is any JSON value, `null` included: it is
    JSON's null, never SQL's NULL (`json_of` keeps NULL for an absent row's value)."""
    payload = "null" if result.payload is None else json_of(result.payload)
    return (position, seq, result.stream, result.request_id, payload)


def payload_of(event: Event | None) -> str | None:
    """The stored payload: the canonical JSON of a storable object, else NULL."""
    if event is None or not isinstance(event.payload, dict):
        return None
    payload = event.payload
    if plain_json(payload):  # storable, and the fast encoder writes it exactly
        return plain_canonical_bytes(payload).decode()
    return canonical_json(payload) if json_problem(payload, "p") is None else None


def _canonical_text(value: Any) -> str:
    """`canonical_json(value)`, by the fast encoder where it writes the same bytes."""
    return plain_canonical_bytes(value).decode() if plain_json(value) else canonical_json(value)


def event_row(
    position: int,
    source_file: str,
    line_number: int,
    event: Event | None,
    outcome: str,
) -> tuple:
    stream = clean_text(event.stream) if event else None
    request_id = request_id_of(event.request_id) if event else None
    return (position, source_file, line_number, stream, request_id, payload_of(event), outcome)


def change_row(position: int, seq: int, change: Change) -> tuple:
    return (
        position,
        seq,
        change.request_id,
        change.table,
        key_text(change.key),
        json_of(change.before),
        json_of(change.after),
    )


def rejection_row(
    position: int, stream: Any, request_id: Any, reason: str, detail: str, raw: bytes
) -> tuple:
    return (position, clean_text(stream), request_id_of(request_id), reason, readable(detail), raw)


def net_row(table: str, key: Any, round_: int, before: Any, after: Any) -> tuple:
    return (table, key_text(key), round_, json_of(before), json_of(after))


# -- CSV and COPY --------------------------------------------------------------------------

# The Arrow type of each column that is not text (text and jsonb travel as strings).
_TYPES = {
    "position": pa.int32(),
    "line_number": pa.int32(),
    "seq": pa.int32(),
    "round": pa.int32(),
}
_BYTEA = {"raw_input"}
_CSV = csv.WriteOptions(include_header=False)


def _column(name: str, values: tuple) -> pa.Array:
    if name in _BYTEA:
        values = tuple(None if v is None else "\\x" + bytes(v).hex() for v in values)
    return pa.array(values, _TYPES.get(name, pa.string()))


def csv_of(leading: dict[str, int | str], columns: tuple[str, ...], rows: list[tuple]) -> bytes:
    """`rows` (tuples of `columns`' values) as CSV in PostgreSQL's COPY form, each after the
    `leading` columns' one value (a batch id, a slot): written by Arrow from columns, so that
    Python touches each value once."""
    arrays = [
        *(_repeated(value, len(rows)) for value in leading.values()),
        *(_column(c, values) for c, values in zip(columns, zip(*rows, strict=True), strict=True)),
    ]
    return _written(pa.Table.from_arrays(arrays, names=[*leading, *columns]))


def journal_csv(batch_id: int, columns: Mapping[str, pa.Array]) -> bytes:
    """A journal table's rows given as Arrow columns (named and ordered as one table's
    `JOURNAL_COLUMNS`) as its CSV: what `csv_of` writes from the same values as rows."""
    names = tuple(columns)
    assert names in _JOURNAL_BY_COLUMNS, f"{names} are no journal table's columns"
    count = len(next(iter(columns.values())))
    arrays = [_repeated(batch_id, count)]
    for name, values in columns.items():
        assert len(values) == count, f"{name}: {len(values)} values for {count} rows"
        if name in _BYTEA:
            arrays.append(_column(name, tuple(values.to_pylist())))
        else:
            arrays.append(values.cast(_TYPES.get(name, pa.string())))
    return _written(pa.Table.from_arrays(arrays, names=["batch_id", *names]))


_JOURNAL_BY_COLUMNS = {columns: table for table, columns in JOURNAL_COLUMNS.items()}


def _written(table: pa.Table) -> bytes:
    data = io.BytesIO()
    csv.write_csv(table, data, write_options=_CSV)
    return data.getvalue()


def _repeated(value: int | str, count: int) -> pa.Array:
    if type(value) is int:
        return pa.array(np.full(count, value, dtype=np.int64))
    return pa.array([value] * count, pa.string())


def copy_statement(table: str, columns: Sequence[str]) -> sql.Composed:
    """`COPY table (columns) FROM STDIN` in CSV form, identifiers quoted."""
    # Composed here: the column list varies (a list of identifiers, joined by ", ").
    return sql.SQL(statement("staging/copy_csv")).format(
        table=sql.Identifier(table), columns=sql.SQL(", ").join(map(sql.Identifier, columns))
    )


class Stager:
    """One task's share of a batch: its journal as CSV for the commit, and the rows a later
    round reads staged in `ledger_stage_rows` over one connection, in one transaction, its
    slot cleared first.

    The transaction first checks that the run's lease (`fence_epoch`) still holds
    (`ledger_engine.store.lease`): a task of a run that lost its lease hands over nothing.
    """

    def __init__(self, dsn: str, batch_id: int, slot: str, fence_epoch: int) -> None:
        self.batch_id = batch_id
        self.slot = slot
        self._journal: dict[str, list[tuple]] = {name: [] for name in JOURNAL_COLUMNS}
        self._staged_rows: list[tuple] = []
        self._conn = psycopg2.connect(dsn)
        try:
            with self._conn.cursor() as cursor:
                check_fence(cursor, fence_epoch)
                cursor.execute(_CLEAR_SLOT, (batch_id, slot))
        except BaseException:
            self._conn.close()
            raise

    def add(self, table: str, row: Sequence[Any]) -> None:
        """A row of a journal table (`JOURNAL_COLUMNS`) or of `ledger_stage_rows`."""
        if table == STAGED_ROWS:
            assert len(row) == len(STAGED_ROW_COLUMNS), f"{table} takes {STAGED_ROW_COLUMNS}"
            self._staged_rows.append(tuple(row))
            return
        assert len(row) == len(JOURNAL_COLUMNS[table]), f"{table} takes {JOURNAL_COLUMNS[table]}"
        self._journal[table].append(tuple(row))

    def flush(self) -> None:
        """Send the buffered rows of `ledger_stage_rows` (inside the task's transaction)."""
        rows = self._staged_rows
        if not rows:
            return
        leading = {"batch_id": self.batch_id, "slot": self.slot}
        data = io.BytesIO(csv_of(leading, STAGED_ROW_COLUMNS, rows))
        statement = copy_statement(STAGED_ROWS, [*leading, *STAGED_ROW_COLUMNS])
        with self._conn.cursor() as cursor:
            cursor.copy_expert(statement.as_string(self._conn), data)
        rows.clear()

    def commit(self) -> JournalPart:
        """Stage what is buffered, commit, close; returns the task's journal for the commit."""
        try:
            self.flush()
            self._conn.commit()
        finally:
            self._conn.close()
        return self.journal()

    def journal(self) -> JournalPart:
        """The task's journal rows, as CSV per table (tables it wrote nothing to left out)."""
        encoded: dict[str, bytes] = {}
        counts: dict[str, int] = {}
        for name, rows in self._journal.items():
            if rows:
                leading = {"batch_id": self.batch_id}
                encoded[name] = csv_of(leading, JOURNAL_COLUMNS[name], rows)
                counts[name] = len(rows)
        return JournalPart.of(self.slot, encoded, counts)

    def abandon(self) -> None:
        self._conn.close()


def clear_staging(conn: Any, batch_id: int | None = None) -> None:
    """Delete the staged rows a later round reads (for one batch, or all of them) on a
    psycopg2 connection."""
    with conn.cursor() as cursor:
        if batch_id is None:
            cursor.execute(_CLEAR_ALL)
        else:
            cursor.execute(_CLEAR_BATCH, (batch_id,))
