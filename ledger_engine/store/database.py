"""Connecting to the system of record: `LEDGER_DATABASE_URL`, or the embedded server.

Each ledger lives in a PostgreSQL schema of its own, named by the SQL identifier derived from
the ledger's name (`ledger_engine.core.naming`: the bank's is `bank`): its tables, views, logs
and locks, so that several ledgers share one database without touching each other's tables.
A ledger's URL (`ledger_url`) puts that schema first on every session's `search_path`, which
every consumer of the URL then honours by itself (SQLAlchemy, psycopg2 in Spark's tasks,
Great Expectations, psql).
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import quote, urlencode

from sqlalchemy import Engine, create_engine, make_url

from ledger_engine.config import Settings
from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.core.naming import sql_identifier
from ledger_engine.store.embedded import start_embedded, to_sqlalchemy_url


def database_url(settings: Settings, *, keep_embedded_running: bool = True) -> str:
    """The SQLAlchemy URL of the database, starting the embedded server if needed."""
    if settings.database_url:
        return to_sqlalchemy_url(settings.database_url)
    return start_embedded(settings.pgdata, keep_running=keep_embedded_running)


def ledger_schema(ledger: StreamingLedger) -> str:
    """The PostgreSQL schema that holds `ledger`."""
    return sql_identifier(ledger.name)


def ledger_url(database_url: str, ledger: StreamingLedger) -> str:
    """`database_url` with `ledger`'s schema as every session's `search_path`."""
    return with_session_settings(database_url, {"search_path": ledger_schema(ledger)})


def with_session_settings(database_url: str, settings: Mapping[str, str]) -> str:
    """`database_url` whose sessions start with `settings` (PostgreSQL's `options`, `-c
    name=value` each, after any the URL already gives: the later of two wins)."""
    if not settings:
        return database_url
    url = make_url(database_url)
    given = url.query.get("options", "")
    if not isinstance(given, str):  # the same option named twice: keep them in order
        given = " ".join(given)
    options = " ".join([given, *(f"-c {name}={value}" for name, value in settings.items())])
    return url.update_query_dict({"options": options.strip()}).render_as_string(hide_password=False)


def libpq_url(url: str) -> str:
    """The libpq connection URI of SQLAlchemy URL `url` (for psycopg2 and psql): its query
    percent-encoded, since libpq reads a `+` as a plus, not a space."""
    parsed = make_url(url)
    base = parsed.set(drivername="postgresql", query={}).render_as_string(hide_password=False)
    query = urlencode(parsed.query, doseq=True, quote_via=quote)
    return f"{base}?{query}" if query else base


def connect(url: str) -> Engine:
    """An engine for `url`; connections are checked before use, since the server may restart."""
    return create_engine(url, pool_pre_ping=True, future=True)


def open_store(
    settings: Settings,
    ledger: StreamingLedger | None = None,
    *,
    keep_embedded_running: bool = True,
) -> Engine:
    """Connect to the schema of `ledger` (default: the `LEDGER_APP` setting's) and bring it up
    to date: the core migrations, then the tables and views the ledger declares."""
    from ledger_engine.store.migrations import migrate
    from ledger_engine.store.schema import apply_declared_schema

    ledger = ledger or _configured_ledger(settings)
    url = database_url(settings, keep_embedded_running=keep_embedded_running)
    engine = connect(ledger_url(url, ledger))
    migrate(engine)
    apply_declared_schema(engine, ledger)
    return engine


def open_views(settings: Settings, ledger: StreamingLedger | None = None) -> Engine:
    """Connect to the schema of `ledger` without touching it: for commands that only query
    the views, which must work with a `ledger_reader` login (it may read nothing else, not
    even the migration history)."""
    ledger = ledger or _configured_ledger(settings)
    return connect(ledger_url(database_url(settings), ledger))


def _configured_ledger(settings: Settings) -> StreamingLedger:
    from ledger_engine.apps import load_ledger

    return load_ledger(settings.app)
