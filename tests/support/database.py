"""Reading a test database."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, text

from ledger_engine.config import Settings
from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.store.database import open_store
from ledger_engine.store.state import snapshot_rows


def rows(engine: Engine, query: str, **params: Any) -> list[tuple]:
    """The rows of `query` (parameters bound by name, `:name`), each as a plain tuple."""
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(query), params)]


def committed_state(settings: Settings, ledger: StreamingLedger) -> dict[str, dict[Any, Any]]:
    """Every declared table of `ledger` as committed in `settings`' database, as a
    `RunResult.state` holds it (table name -> key -> value)."""
    engine = open_store(settings)
    try:
        with engine.connect() as conn:
            return {name: dict(snapshot_rows(conn, table)) for name, table in ledger.tables.items()}
    finally:
        engine.dispose()
