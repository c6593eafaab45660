"""Reading a declared table's rows whole, in the order Merkle roots hash them.

Each declared table is stored as a PostgreSQL table `(key, value)` named by its `sql_name`
(`ledger_engine.store.schema` creates it), quoted with `psycopg2.sql.Identifier` into the
statements of `sql/state/`.
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlalchemy import Connection

from ledger_engine.core.declarations import Table
from ledger_engine.store.sql_files import identified


def state_rows(conn: Connection, table: Table, batch_size: int = 10_000) -> Iterator[tuple]:
    """Every row of `table`, sorted by key in code-point order (what Merkle roots hash)."""
    by_key = "state/rows_by_text_key" if table.key_type is str else "state/rows_by_number_key"
    query = identified(by_key, table=table.sql_name)
    # A named (server-side) cursor streams the table instead of loading it whole.
    with conn.connection.cursor(name=f"state_{table.sql_name}") as cursor:
        cursor.itersize = batch_size
        cursor.execute(query)
        yield from cursor
