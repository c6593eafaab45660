"""The ledger's tables in PostgreSQL: checking their schema, reading whole snapshots.

Each declared table `t` is stored as a PostgreSQL table `t (key, value)`: `key` is `text` or
`bigint`, `value` is `bigint`, `text` or `jsonb` by the declared types. Table names are
identifiers declared by the application and validated by the API; they are quoted with
`psycopg2.sql.Identifier`, never formatted in.
"""

from __future__ import annotations

from collections.abc import Iterator

from psycopg2 import sql
from sqlalchemy import Connection, text

from ledger_engine.core.declarations import StreamingLedger, Table
from ledger_engine.errors import SchemaMismatch

_SQL_VALUE_TYPE = {int: "bigint", str: "text", dict: "jsonb"}
_SQL_KEY_TYPE = {int: "bigint", str: "text"}


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
