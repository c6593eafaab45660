"""Shared fixtures: a real PostgreSQL server and fresh databases on it, and a local Spark.

PostgreSQL: the server at `LEDGER_DATABASE_URL` when it is set, otherwise an embedded server
(`pgserver`) started for the test session in a temporary folder and stopped at its end. Every
test that needs a database gets a fresh, migrated one of its own, dropped afterwards.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pgserver
import pytest
from psycopg2 import sql
from sqlalchemy import Engine, create_engine, make_url

from ledger_engine.store.database import connect
from ledger_engine.store.embedded import to_sqlalchemy_url
from ledger_engine.store.migrations import migrate


@pytest.fixture(scope="session")
def pg_server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """SQLAlchemy URL of a PostgreSQL server's maintenance database."""
    external = os.environ.get("LEDGER_DATABASE_URL")
    if external:
        yield to_sqlalchemy_url(external)
        return
    server = pgserver.get_server(tmp_path_factory.mktemp("pg"), cleanup_mode="stop")
    try:
        yield to_sqlalchemy_url(server.get_uri())
    finally:
        server.cleanup()


def _admin(url: str) -> Engine:
    return create_engine(url, isolation_level="AUTOCOMMIT")


@pytest.fixture
def empty_database_url(pg_server_url: str) -> Iterator[str]:
    """URL of a new, empty database, dropped after the test."""
    name = f"ledger_test_{uuid.uuid4().hex[:12]}"
    admin = _admin(pg_server_url)
    with admin.connect() as conn:
        conn.connection.cursor().execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield make_url(pg_server_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.connection.cursor().execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
        admin.dispose()


@pytest.fixture
def database_url(empty_database_url: str) -> str:
    """URL of a new database with the schema of `sql/` applied."""
    engine = connect(empty_database_url)
    migrate(engine)
    engine.dispose()
    return empty_database_url


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    """An engine on a fresh, migrated database."""
    engine = connect(database_url)
    yield engine
    engine.dispose()


@pytest.fixture(scope="session")
def spark():
    """A local Spark session with two cores, shared by the whole test session."""
    from ledger_engine.spark.session import build_session

    session = build_session("local[2]", app_name="ledger-tests")
    yield session
    session.stop()
