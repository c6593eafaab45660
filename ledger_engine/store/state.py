"""Reading ledger tables and executed request ids from PostgreSQL.

Each declared table `t` is stored as a PostgreSQL table `t (key, value)`: `key` is `text` or
`bigint`, `value` is `bigint`, `text` or `jsonb` by the declared types. Table names are
identifiers declared by the application and validated by the API; they are quoted with
`psycopg2.sql.Identifier`, never formatted in.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from psycopg2 import sql
from sqlalchemy import Connection, text

from ledger_engine.admission import valid_request_id
from ledger_engine.api import StreamingLedger, Table

_SQL_VALUE_TYPE = {int: "bigint", str: "text", dict: "jsonb"}
_SQL_KEY_TYPE = {int: "bigint", str: "text"}


class SchemaMismatch(RuntimeError):
    """A declared table has no matching PostgreSQL table."""


def check_state_tables(conn: Connection, ledger: StreamingLedger) -> None:
    """Raise `SchemaMismatch` unless every declared table has a `(key, value)` table of the
    declared types (its migration lives in `sql/`)."""
    for table in ledger.tables.values():
        columns = dict(
            conn.execute(
                text(
                    "SELECT column_name, data_type FROM information_schema.columns"
                    " WHERE table_schema = current_schema() AND table_name = :name"
                ),
                {"name": table.name},
            ).all()
        )
        expected = {
            "key": _SQL_KEY_TYPE[table.key_type],
            "value": _SQL_VALUE_TYPE[table.value_type],
        }
        if columns != expected:
            raise SchemaMismatch(
                f"table {table.name!r} of ledger {ledger.name!r} needs a PostgreSQL table with "
                f"columns {expected}, found {columns or 'none'}; add a migration to sql/"
            )


def key_text(key: Any) -> str:
    """A key as stored in the change log (`text` for every key type)."""
    return key if isinstance(key, str) else str(key)


def load_rows(
    conn: Connection, ledger: StreamingLedger, keys: Mapping[str, Iterable[Any]]
) -> dict[str, dict[Any, Any]]:
    """The current rows of the given keys, by table; absent rows are absent from the result."""
    tables = ledger.tables
    state: dict[str, dict[Any, Any]] = {name: {} for name in tables}
    cursor = conn.connection.cursor()
    for name, wanted in keys.items():
        key_list = list(set(wanted))
        if not key_list:
            continue
        query = sql.SQL("SELECT key, value FROM {} WHERE key = ANY(%s)").format(
            sql.Identifier(name)
        )
        cursor.execute(query, (key_list,))
        state[name] = dict(cursor.fetchall())
    return state


def snapshot_rows(conn: Connection, table: Table, batch_size: int = 10_000) -> Iterator[tuple]:
    """Every row of `table`, sorted by key in code-point order (what Merkle roots hash)."""
    order = sql.SQL('key COLLATE "C"') if table.key_type is str else sql.SQL("key")
    query = sql.SQL("SELECT key, value FROM {} ORDER BY {}").format(
        sql.Identifier(table.name), order
    )
    # A named (server-side) cursor streams the table instead of loading it whole.
    with conn.connection.cursor(name=f"snapshot_{table.name}") as cursor:
        cursor.itersize = batch_size
        cursor.execute(query)
        yield from cursor


def known_requests(conn: Connection, request_ids: Iterable[str]) -> dict[str, str]:
    """Fingerprints of the given request ids that earlier batches executed."""
    ids = list({rid for rid in request_ids if valid_request_id(rid)})
    if not ids:
        return {}
    rows = conn.execute(
        text("SELECT request_id, fingerprint FROM ledger_requests WHERE request_id = ANY(:ids)"),
        {"ids": ids},
    )
    return dict(rows.all())
