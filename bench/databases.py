"""Creating and dropping whole databases on a PostgreSQL server, for the benchmark's runs
(`bench/run.py`) and the test suite's fresh databases (`tests/conftest.py`).

`CREATE DATABASE` and `DROP DATABASE` cannot run inside a transaction, so each statement runs
on a connection of its own in autocommit. The platform itself never creates a database (it is
given one), hence these live beside the benchmark rather than in `ledger_engine.store`.
"""

from __future__ import annotations

from psycopg2 import sql
from sqlalchemy import create_engine, make_url


def execute_autocommit(server_url: str, statement: sql.Composable) -> None:
    """Run `statement` on the server of `server_url` (a SQLAlchemy URL of any database on it)
    outside any transaction."""
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.connection.cursor().execute(statement)
    finally:
        admin.dispose()


def create_database(server_url: str, name: str, *, template: str | None = None) -> str:
    """Create the database `name` on the server of `server_url`, empty or, given `template`
    (the name of a database on the same server, which must have no open connections), a copy
    of it file by file: far cheaper than filling it again. Returns `server_url` with its
    database changed to the new one."""
    statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template is not None:
        statement += sql.SQL(" TEMPLATE {}").format(sql.Identifier(template))
    execute_autocommit(server_url, statement)
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


def drop_database(server_url: str, name: str) -> None:
    """Drop the database `name` on the server of `server_url` if it exists, disconnecting
    whoever is still connected to it (`WITH (FORCE)`)."""
    statement = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
    execute_autocommit(server_url, statement)
