"""Reading a test database."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg2 import sql
from sqlalchemy import Engine, text

from ledger_engine.config import Settings
from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.store.database import open_store
from ledger_engine.store.state import state_rows


def rows(engine: Engine, query: str, **params: Any) -> list[tuple]:
    """The rows of `query` (parameters bound by name, `:name`), each as a plain tuple."""
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(query), params)]


def single_value(engine: Engine, query: str) -> Any:
    """The one value of `query`'s one row."""
    with engine.connect() as conn:
        return conn.execute(text(query)).scalar_one()


def committed_state(settings: Settings, ledger: StreamingLedger) -> dict[str, dict[Any, Any]]:
    """Every declared table of `ledger` as committed in `settings`' database, as a
    `RunResult.state` holds it (table name -> key -> value)."""
    engine = open_store(settings)
    try:
        with engine.connect() as conn:
            return {name: dict(state_rows(conn, table)) for name, table in ledger.tables.items()}
    finally:
        engine.dispose()


# The tables that hold a ledger's schema, identity and lease rather than what its runs wrote:
# kept.
_SCHEMA_TABLES = ("ledger_schema_migrations", "ledger_fence", "ledger_runs", "ledger_identity")


def empty_ledger(engine: Engine) -> None:
    """Delete every row the ledger's runs wrote (batches, journal, table rows, statements,
    reconciliation, audits: every table of its schema but its migrations, declarations and
    lease), identities restarted: the ledger as just migrated, far cheaper than a fresh
    database, for a test that needs one per generated example."""
    with engine.begin() as conn:
        cursor = conn.connection.cursor()
        cursor.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            " AND tablename NOT LIKE 'ledger\\_declared\\_%%' AND NOT tablename = ANY(%s)",
            (list(_SCHEMA_TABLES),),
        )
        tables = [name for (name,) in cursor.fetchall()]
        assert {"ledger_batches", "ledger_recon_runs", "accounts"} <= set(tables), tables
        cursor.execute(
            sql.SQL("TRUNCATE {} RESTART IDENTITY").format(
                sql.SQL(", ").join(map(sql.Identifier, tables))
            )
        )


def table_reads(cursor, tables: Sequence[str]) -> dict[str, list[int]]:
    """For each of `tables`, [scans, rows read by scans, rows fetched by index] that the
    backend of `cursor` (psycopg2) has not yet reported (`pg_stat_xact_user_tables`): within
    one transaction, two readings differ by exactly what the transaction read in between."""
    cursor.execute(
        "SELECT relname, seq_scan, seq_tup_read, coalesce(idx_tup_fetch, 0)"
        " FROM pg_stat_xact_user_tables"
        " WHERE schemaname = current_schema() AND relname = ANY(%s)",
        (list(tables),),
    )
    found = {name: list(counts) for name, *counts in cursor.fetchall()}
    assert set(found) == set(tables), found
    return found
