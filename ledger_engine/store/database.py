"""Connecting to the system of record: `LEDGER_DATABASE_URL`, or the embedded server."""

from __future__ import annotations

from sqlalchemy import Engine, create_engine

from ledger_engine.config import Settings
from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.store.embedded import start_embedded, to_sqlalchemy_url


def database_url(settings: Settings, *, keep_embedded_running: bool = True) -> str:
    """The SQLAlchemy URL of the system of record, starting the embedded server if needed."""
    if settings.database_url:
        return to_sqlalchemy_url(settings.database_url)
    return start_embedded(settings.pgdata, keep_running=keep_embedded_running)


def connect(url: str) -> Engine:
    """An engine for `url`; connections are checked before use, since the server may restart."""
    return create_engine(url, pool_pre_ping=True, future=True)


def open_store(
    settings: Settings,
    ledger: StreamingLedger | None = None,
    *,
    keep_embedded_running: bool = True,
) -> Engine:
    """Connect to the system of record and bring its schema up to date: the core migrations,
    and the tables and views `ledger` declares when it is given."""
    from ledger_engine.store.migrations import migrate
    from ledger_engine.store.schema import apply_declared_schema

    engine = connect(database_url(settings, keep_embedded_running=keep_embedded_running))
    migrate(engine)
    if ledger is not None:
        apply_declared_schema(engine, ledger)
    return engine


def open_views(settings: Settings) -> Engine:
    """Connect to the system of record without touching its schema: for commands that only
    query the views, which must work with a `ledger_reader` login (it may read nothing else,
    not even the migration history)."""
    return connect(database_url(settings))
