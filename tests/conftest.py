"""Shared fixtures: a real PostgreSQL server and fresh databases on it, and a local Spark.

PostgreSQL: the server at `LEDGER_DATABASE_URL` when it is set, otherwise an embedded server
(`pgserver`) started once for the test session in a temporary folder of its own and stopped
(and the folder removed) at its end. Every test that asks for `database_url` gets a fresh,
uniquely named database of its own, dropped (`WITH (FORCE)`) afterwards, with the bank
ledger's schema migrated: its URL is the bank's ledger URL (`store.database.ledger_url`).

A fresh migrated database is a copy (`CREATE DATABASE ... TEMPLATE`) of one migrated once for
the session, made as if migrated anew: the database's own grants (which a copy does not take)
and a ledger identity of its own (which a copy keeps). tests/store/test_test_databases.py
checks that such a copy is what a migration makes; it costs a fraction of one.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pgserver
import pytest
from psycopg2 import sql
from sqlalchemy import Connection, Engine, create_engine, make_url

from bench.databases import create_database, drop_database, execute_autocommit
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.pipeline.job import BatchProcessor, BatchSummary, files_frame
from ledger_engine.store.database import connect, ledger_url
from ledger_engine.store.embedded import to_sqlalchemy_url
from ledger_engine.store.lease import run_lease
from ledger_engine.store.migrations import migrate
from ledger_engine.store.schema import apply_declared_schema


def pytest_configure(config: pytest.Config) -> None:
    """A pytest-xdist worker runs under execnet, whose `__main__` has neither a spec nor a
    file: pyspark.sql.connect (which Great Expectations imports) takes that for a doctest run
    and exits the worker (`check_dependencies`). The worker's main module is given a name."""
    main = sys.modules["__main__"]
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker and getattr(main, "__spec__", None) is None and not hasattr(main, "__file__"):
        main.__file__ = f"<pytest-xdist worker {worker}>"


@pytest.fixture(scope="session")
def pg_server_url() -> Iterator[str]:
    """SQLAlchemy URL (`postgresql+psycopg2://...`) of a server's maintenance database:
    `LEDGER_DATABASE_URL` if set, else an embedded server living as long as the session.

    The embedded server's data folder is a fresh temporary folder of its own, not one under
    pytest's `tmp_path_factory`: run as root, pgserver runs PostgreSQL as the user `pgserver`
    and opens the folders above its data to that user, and every pytest session that starts
    meanwhile (another checkout's, a colleague's) resets `/tmp/pytest-of-root` to mode 0700,
    which makes the running server panic ("Permission denied" on its data folder)."""
    external = os.environ.get("LEDGER_DATABASE_URL")
    if external:
        yield to_sqlalchemy_url(external)
        return
    pgdata = Path(tempfile.mkdtemp(prefix="ledger-test-pg-"))
    try:
        server = pgserver.get_server(pgdata, cleanup_mode="stop")
        try:
            yield to_sqlalchemy_url(server.get_uri())
        finally:
            server.cleanup()
    finally:
        shutil.rmtree(pgdata, ignore_errors=True)


def _create_database(
    server_url: str,
    created: list[str],
    *,
    migrated: bool,
    template: str | None = None,
    migrated_template: str | None = None,
) -> str:
    """A uniquely named database, its name added to `created` (to drop it afterwards): a copy
    of the database of the URL `template` (far cheaper than committing its batches again), or
    an empty one, the bank's schema migrated if `migrated`: as a copy of the database named
    `migrated_template` made as if migrated anew, when given one."""
    name = f"ledger_test_{uuid.uuid4().hex[:12]}"
    if template is not None:
        source = make_url(template).database
    else:
        source = migrated_template if migrated else None
    url = create_database(server_url, name, template=source)
    created.append(name)
    if template is not None:  # a copy of a ledger: its URL is the template's, schema included
        return make_url(template).set(database=name).render_as_string(hide_password=False)
    if not migrated:
        return url
    url = ledger_url(url, build_ledger())
    engine = connect(url)
    try:
        if migrated_template is None:
            migrate(engine)
            apply_declared_schema(engine, build_ledger())
        else:
            _as_if_migrated_anew(server_url, name, migrated_template, engine)
    finally:
        engine.dispose()
    return url


def _as_if_migrated_anew(server_url: str, name: str, template: str, engine: Engine) -> None:
    """Make the database `name`, a copy of `template`, what migrating it would have made: a
    copy takes neither the grants on the database itself (0007_roles.sql's; they belong to
    the server's catalog) nor a new ledger identity (0023_ledger_identity.sql: a copy keeps
    its template's, as a restored backup does)."""
    execute_autocommit(
        server_url,
        sql.SQL(
            "UPDATE pg_database SET datacl ="
            " (SELECT datacl FROM pg_database WHERE datname = {template})"
            " WHERE datname = {name}"
        ).format(template=sql.Literal(template), name=sql.Literal(name)),
    )
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "UPDATE ledger_identity SET id = gen_random_uuid(), created_at = clock_timestamp()"
        )


@pytest.fixture(scope="session")
def migrated_template(pg_server_url: str) -> Iterator[str]:
    """The name of a database with the bank's schema migrated once for the session, of which
    every fresh migrated database is a copy. Nothing connects to it after it is made."""
    created: list[str] = []
    url = _create_database(pg_server_url, created, migrated=True)
    yield make_url(url).database
    _drop_databases(pg_server_url, created)


def _drop_databases(server_url: str, created: list[str]) -> None:
    for name in created:
        drop_database(server_url, name)


def _database_factory(pg_server_url: str, migrated_template: str) -> Iterator[Callable[..., str]]:
    """The factory of `make_database_url`, yielded once; its databases dropped after."""
    created: list[str] = []

    def make(*, migrated: bool = True, template: str | None = None) -> str:
        return _create_database(
            pg_server_url,
            created,
            migrated=migrated,
            template=template,
            migrated_template=migrated_template,
        )

    yield make
    _drop_databases(pg_server_url, created)


@pytest.fixture
def make_database_url(pg_server_url: str, migrated_template: str) -> Iterator[Callable[..., str]]:
    """A factory of fresh databases with the bank's schema migrated; each call returns the
    SQLAlchemy URL of a new one (`template=url`: a copy of that database, which must have no
    open connections). All are dropped after the test."""
    yield from _database_factory(pg_server_url, migrated_template)


@pytest.fixture(scope="module")
def module_make_database_url(
    pg_server_url: str, migrated_template: str
) -> Iterator[Callable[..., str]]:
    """`make_database_url` for a whole test module: its databases are dropped after the
    module's last test (for fixtures that prepare several ledgers once for a module)."""
    yield from _database_factory(pg_server_url, migrated_template)


@pytest.fixture(scope="module")
def module_database_url(pg_server_url: str, migrated_template: str) -> Iterator[str]:
    """SQLAlchemy URL of a fresh migrated database shared by one test module, dropped after
    it (for a reference run that several tests compare with)."""
    created: list[str] = []
    yield _create_database(
        pg_server_url, created, migrated=True, migrated_template=migrated_template
    )
    _drop_databases(pg_server_url, created)


@pytest.fixture(scope="module")
def module_empty_database_url(pg_server_url: str) -> Iterator[str]:
    """SQLAlchemy URL of a fresh database with no schema at all, shared by one test module
    (each ledger migrates its own schema into it), dropped after it."""
    created: list[str] = []
    yield _create_database(pg_server_url, created, migrated=False)
    _drop_databases(pg_server_url, created)


@pytest.fixture(scope="module")
def conn(module_database_url: str) -> Iterator[Connection]:
    """A connection to the module's database (`module_database_url`), open for the module (for
    a module that asks PostgreSQL to compute what Python computes)."""
    engine = create_engine(to_sqlalchemy_url(module_database_url))
    with engine.connect() as connection:
        yield connection
    engine.dispose()


@pytest.fixture
def database_url(make_database_url: Callable[[], str]) -> str:
    """The bank's ledger URL on a fresh database with its schema migrated, dropped after
    the test."""
    return make_database_url()


@pytest.fixture
def engine_on() -> Iterator[Callable[[str], Engine]]:
    """`engine_on(url)`: an engine on the database of `url`, disposed after the test (for a
    fixture's or a test's own database, such as a copy made with `make_database_url`)."""
    engines: list[Engine] = []

    def open_engine(url: str) -> Engine:
        engines.append(connect(url))
        return engines[-1]

    yield open_engine
    for engine in engines:
        engine.dispose()


@pytest.fixture
def engine(database_url: str, engine_on: Callable[[str], Engine]) -> Engine:
    """An engine on the test's fresh database."""
    return engine_on(database_url)


@pytest.fixture
def empty_database_url(make_database_url: Callable[..., str]) -> str:
    """SQLAlchemy URL of a fresh database with no schema at all, dropped after the test."""
    return make_database_url(migrated=False)


@pytest.fixture(scope="session")
def spark():
    """A local Spark session with two cores, shared by the whole test session."""
    from ledger_engine.runtime.spark.session import build_session

    session = build_session("local[2]", app_name="ledger-tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def commit_files(spark) -> Callable[..., BatchSummary]:
    """`commit(engine, batch_id, files, ledger=None)`: run one micro-batch of `files`
    (name, content) through the pipeline (Spark, staging, commit) into `engine`'s database,
    under a run lease of its own."""

    def commit(
        engine: Engine,
        batch_id: int,
        files: Iterable[tuple[str, bytes]],
        ledger: StreamingLedger | None = None,
    ) -> BatchSummary:
        with run_lease(engine, "pytest commit_files") as lease:
            processor = BatchProcessor(spark, ledger or build_ledger(), engine, lease)
            return processor.process(batch_id, files_frame(spark, list(files)))

    return commit
