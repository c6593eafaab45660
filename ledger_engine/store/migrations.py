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

from psycopg2 import sql
from sqlalchemy import Engine

from ledger_engine.config import PROJECT_ROOT
from ledger_engine.errors import MigrationError

SQL_DIR = PROJECT_ROOT / "sql"
# An arbitrary constant naming "schema migration" among the platform's advisory locks.
MIGRATION_LOCK = 7_318_001


# Texts of core migrations that a later release replaced, still accepted where applied. Up to
# issue 13 the core migrations created the bank's tables (0002, now left out), its views (0003)
# and their grants and page fill (0007, 0012); these now come from the bank's declarations, and
# a database migrated before holds them already: the generated migration adopts its tables.
_SUPERSEDED = {
    "0003": {"b17aa87b0f4ec91421ec8c696e8e175a9b8364a964428ddbe90d05eb35027e91"},
    "0007": {"81f71bd4416ad19bc5893e066ef42a8048352f9eb4af911b5bbbca53ea5319ed"},
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
    cursor.execute("SELECT current_schema(), current_setting('search_path')")
    schema, path = cursor.fetchone()
    if schema is not None:
        return
    name = path.split(",")[0].strip().strip('"')
    if not name or name == "$user":
        raise MigrationError(f"the session's search_path {path!r} names no schema to create")
    cursor.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    cursor.execute("SELECT current_schema()")
    assert cursor.fetchone()[0] == name


def migrate(engine: Engine, sql_dir: Path = SQL_DIR) -> list[str]:
    """Apply every migration not yet applied; return the versions applied now."""
    applied_now: list[str] = []
    with engine.begin() as conn:
        cursor = conn.connection.cursor()
        cursor.execute("SELECT pg_advisory_xact_lock(%(lock)s)", {"lock": MIGRATION_LOCK})
        _create_schema_on_path(cursor)
        # Only the schema's owner may create tables: a writer or reader login connecting to an
        # up-to-date database must get past this without touching DDL.
        cursor.execute("SELECT to_regclass('ledger_schema_migrations')")
        if cursor.fetchone()[0] is None:
            cursor.execute(
                "CREATE TABLE ledger_schema_migrations ("
                " version text PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT clock_timestamp())"
            )
        cursor.execute("SELECT version, checksum FROM ledger_schema_migrations")
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
                "INSERT INTO ledger_schema_migrations (version, name, checksum)"
                " VALUES (%(version)s, %(name)s, %(checksum)s)",
                {
                    "version": migration.version,
                    "name": migration.path.name,
                    "checksum": migration.checksum,
                },
            )
            applied_now.append(migration.version)
    return applied_now
