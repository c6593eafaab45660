"""Staging a batch's outcome in PostgreSQL, from many Spark tasks at once.

Each task writes its part of the batch into the `ledger_stage_*` tables (`sql/0004`) over a
connection of its own, with `COPY`, in one transaction, under its *slot* (which task of which
stage it is). It first deletes whatever its slot already holds, so a task that Spark runs
again replaces its earlier attempt instead of doubling it. Nothing staged is visible in the
ledger until the batch's commit (`ledger_engine.store.commit`) moves it, in one transaction.

The `*_row` functions say what the system of record keeps about an outcome; they are the one
place where engine values become column values.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg2
import pyarrow as pa
from psycopg2 import sql
from pyarrow import csv

from ledger_engine.admission import valid_request_id
from ledger_engine.model import Change, Event, canonical_json, plain_canonical_bytes
from ledger_engine.store.lease import check_fence
from ledger_engine.values import json_problem, key_text, plain_json, storable_text

STAGE_COLUMNS: dict[str, tuple[str, ...]] = {
    "ledger_stage_events": (
        "position",
        "source_file",
        "line_number",
        "stream",
        "request_id",
        "payload",
        "outcome",
    ),
    "ledger_stage_change_log": (
        "position",
        "seq",
        "request_id",
        "table_name",
        "key",
        "before",
        "after",
    ),
    "ledger_stage_results": ("position", "seq", "stream", "request_id", "payload"),
    "ledger_stage_rejections": (
        "position",
        "stream",
        "request_id",
        "reason",
        "detail",
        "raw_input",
    ),
    "ledger_stage_duplicates": ("position", "stream", "request_id", "kind"),
    "ledger_stage_requests": ("request_id", "position", "fingerprint", "outcome"),
    "ledger_stage_rows": ("table_name", "key", "round", "before", "after"),
}


def dsn_of(url: str) -> str:
    """A libpq connection string from a SQLAlchemy URL."""
    return url.replace("postgresql+psycopg2://", "postgresql://", 1)


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


# -- COPY ----------------------------------------------------------------------------------

# The Arrow type of each staged column that is not text (text and jsonb travel as strings).
_TYPES = {
    "position": pa.int32(),
    "line_number": pa.int32(),
    "seq": pa.int32(),
    "round": pa.int32(),
}
_BYTEA = {"raw_input"}


def _column(name: str, values: tuple) -> pa.Array:
    if name in _BYTEA:
        values = tuple(None if v is None else "\\x" + bytes(v).hex() for v in values)
    return pa.array(values, _TYPES.get(name, pa.string()))


class Stager:
    """One task's staging: one connection, one transaction, its slot cleared first.

    The transaction first checks that the run's lease (`fence_epoch`) still holds
    (`ledger_engine.store.lease`): a task of a run that lost its lease stages nothing.

    Rows are buffered per table and sent with `COPY ... (FORMAT csv)`, written by Arrow's CSV
    writer from columns, so that Python touches each value once.
    """

    def __init__(self, dsn: str, batch_id: int, slot: str, fence_epoch: int) -> None:
        self.batch_id = batch_id
        self.slot = slot
        self.counts: dict[str, int] = dict.fromkeys(STAGE_COLUMNS, 0)
        self._rows: dict[str, list[tuple]] = {name: [] for name in STAGE_COLUMNS}
        self._conn = psycopg2.connect(dsn)
        try:
            with self._conn.cursor() as cursor:
                check_fence(cursor, fence_epoch)
                for name in STAGE_COLUMNS:
                    cursor.execute(
                        sql.SQL("DELETE FROM {} WHERE batch_id = %s AND slot = %s").format(
                            sql.Identifier(name)
                        ),
                        (batch_id, slot),
                    )
        except BaseException:
            self._conn.close()
            raise

    def add(self, table: str, row: Sequence[Any]) -> None:
        assert len(row) == len(STAGE_COLUMNS[table]), f"{table} takes {STAGE_COLUMNS[table]}"
        self._rows[table].append(tuple(row))
        self.counts[table] += 1

    def flush(self) -> None:
        with self._conn.cursor() as cursor:
            for name, rows in self._rows.items():
                if not rows:
                    continue
                columns = STAGE_COLUMNS[name]
                arrays = [
                    pa.array(np.full(len(rows), self.batch_id, dtype=np.int64)),
                    pa.array([self.slot] * len(rows), pa.string()),
                    *(
                        _column(c, values)
                        for c, values in zip(columns, zip(*rows, strict=True), strict=True)
                    ),
                ]
                table = pa.Table.from_arrays(arrays, names=["batch_id", "slot", *columns])
                data = io.BytesIO()
                csv.write_csv(table, data, write_options=_CSV)
                data.seek(0)
                identifiers = sql.SQL(", ").join(map(sql.Identifier, table.column_names))
                statement = sql.SQL("COPY {} ({}) FROM STDIN WITH (FORMAT csv)").format(
                    sql.Identifier(name), identifiers
                )
                cursor.copy_expert(statement.as_string(self._conn), data)
                rows.clear()

    def commit(self) -> dict[str, int]:
        """Write what is buffered, commit, close; returns the rows staged per table."""
        try:
            self.flush()
            self._conn.commit()
        finally:
            self._conn.close()
        return dict(self.counts)

    def abandon(self) -> None:
        self._conn.close()


_CSV = csv.WriteOptions(include_header=False)


def clear_staging(conn: Any, batch_id: int | None = None) -> None:
    """Delete what is staged (for one batch, or all of it) on a psycopg2 connection."""
    with conn.cursor() as cursor:
        for name in STAGE_COLUMNS:
            if batch_id is None:
                cursor.execute(sql.SQL("TRUNCATE {}").format(sql.Identifier(name)))
            else:
                cursor.execute(
                    sql.SQL("DELETE FROM {} WHERE batch_id = %s").format(sql.Identifier(name)),
                    (batch_id,),
                )
