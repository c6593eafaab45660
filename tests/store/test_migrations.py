"""The schema comes from the plain SQL files of sql/, applied in order, once each."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from ledger_engine.errors import MigrationError
from ledger_engine.store.database import connect
from ledger_engine.store.migrations import SQL_DIR, migrate, migrations


def test_migrations_are_numbered_files_applied_in_order(empty_database_url: str) -> None:
    engine = connect(empty_database_url)
    applied = migrate(engine)
    assert applied == [m.version for m in migrations()]
    assert applied == sorted(applied)
    with engine.connect() as conn:
        recorded = conn.execute(
            text("SELECT version FROM ledger_schema_migrations ORDER BY version")
        ).scalars()
        assert list(recorded) == applied
    engine.dispose()


def test_applying_twice_changes_nothing(engine: Engine) -> None:
    assert migrate(engine) == []


def test_an_applied_migration_that_changed_is_an_error(
    empty_database_url: str, tmp_path: Path
) -> None:
    sql_dir = tmp_path / "sql"
    shutil.copytree(SQL_DIR, sql_dir)
    engine = connect(empty_database_url)
    migrate(engine, sql_dir)
    first = sorted(sql_dir.glob("*.sql"))[0]
    first.write_text(first.read_text() + "\n-- edited after the fact\n")
    with pytest.raises(MigrationError, match="changed after it was applied"):
        migrate(engine, sql_dir)
    engine.dispose()
