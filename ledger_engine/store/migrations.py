"""Applying the plain SQL files of `sql/` in order, once each, under an advisory lock.

These are the core migrations, the same for every ledger; the tables and views an application
declares are generated from its declarations (`ledger_engine.store.schema`). All pending files
run in one transaction, each with its row in `ledger_schema_migrations`; an applied file whose
text has changed since is an error, not something to paper over.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from ledger_engine.config import PROJECT_ROOT
from ledger_engine.errors import MigrationError
from ledger_engine.store.locks import MIGRATION_LOCK
from ledger_engine.store.sql_files import identified, statement

SQL_DIR = PROJECT_ROOT / "sql"

# The statements that apply the migrations (sql/migrations/ beside this module), not the
# migrations themselves (SQL_DIR, at the project's root).
_LOCK = statement("migrations/lock")
_SEARCH_PATH = statement("migrations/search_path")
_CURRENT_SCHEMA = statement("migrations/current_schema")
_HISTORY_TABLE = statement("migrations/history_table")
_CREATE_HISTORY = statement("migrations/create_history")
_APPLIED = statement("migrations/applied")
_RECORD = statement("migrations/record")


# Texts of core migrations that a later release replaced, still accepted where applied. Up to
# issue 13 the core migrations created the bank's tables (0002, now left out), its views (0003)
# and their grants and page fill (0007, 0012); these now come from the bank's declarations, and
# a database migrated before holds them already: the generated migration adopts its tables.
# Issue 32 changed comments only (0009, 0011: the audit modules they name moved).
_SUPERSEDED = {
    "0003": {"b17aa87b0f4ec91421ec8c696e8e175a9b8364a964428ddbe90d05eb35027e91"},
    "0007": {"81f71bd4416ad19bc5893e066ef42a8048352f9eb4af911b5bbbca53ea5319ed"},
    "0009": {"99a8e25e3127d0935ef7dd64a01b351f46f3f490c4ca132bc488a9e49da3ce91"},
    "0011": {"002bd309b7da829bd4bef67bdb48ff58409c771405f7edd0256155eb18478dbd"},
    "0012": {"9c543190152ad6374c542cf46794c515cdb42641d219d73744fa6d66236e0629"},
}


@dataclass(frozen=True)
class Migration:
    version: str
    path: Path

    @property
    def sql(self) -> str:
        return self.path.read_text(encoding="utf-8")

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.path.read_bytes()).hexdigest()


def migrations(sql_dir: Path = SQL_DIR) -> list[Migration]:
    """The migration files, in the order they apply (by file name: `0001_...sql`, ...)."""
    found = sorted(sql_dir.glob("[0-9][0-9][0-9][0-9]_*.sql"))
    versions = [p.name.split("_", 1)[0] for p in found]
    if len(set(versions)) != len(versions):
        raise MigrationError(f"two migrations share a version number in {sql_dir}")
    return [Migration(version, path) for version, path in zip(versions, found, strict=True)]


def _create_schema_on_path(cursor: Any) -> None:
    """Create the schema that the session's `search_path` names first (a ledger's own, see
    `ledger_engine.store.database`), the first time a ledger is migrated."""
    cursor.execute(_SEARCH_PATH)
    schema, path = cursor.fetchone()
    if schema is not None:
        return
    name = path.split(",")[0].strip().strip('"')
    if not name or name == "$user":
        raise MigrationError(f"the session's search_path {path!r} names no schema to create")
    cursor.execute(identified("migrations/create_schema", schema=name))
    cursor.execute(_CURRENT_SCHEMA)
    assert cursor.fetchone()[0] == name


def migrate(engine: Engine, sql_dir: Path = SQL_DIR) -> list[str]:
    """Apply every migration not yet applied; return the versions applied now."""
    applied_now: list[str] = []
    with engine.begin() as conn:
        cursor = conn.connection.cursor()
        cursor.execute(_LOCK, {"lock": MIGRATION_LOCK})
        _create_schema_on_path(cursor)
        # Only the schema's owner may create tables: a writer or reader login connecting to an
        # up-to-date database must get past this without touching DDL.
        cursor.execute(_HISTORY_TABLE)
        if cursor.fetchone()[0] is None:
            cursor.execute(_CREATE_HISTORY)
        cursor.execute(_APPLIED)
        done = dict(cursor.fetchall())
        for migration in migrations(sql_dir):
            if migration.version in done:
                accepted = {migration.checksum} | _SUPERSEDED.get(migration.version, set())
                if done[migration.version] not in accepted:
                    raise MigrationError(
                        f"migration {migration.path.name} changed after it was applied"
                    )
                continue
            cursor.execute(migration.sql)  # no parameters: the file's text runs as it is
            cursor.execute(
                _RECORD,
                {
                    "version": migration.version,
                    "name": migration.path.name,
                    "checksum": migration.checksum,
                },
            )
            applied_now.append(migration.version)
    return applied_now
