"""Applying the plain SQL files of `sql/` in order, once each, under an advisory lock.

All pending files run in one transaction, each with its row in `ledger_schema_migrations`;
an applied file whose text has changed since is an error, not something to paper over.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, text

from ledger_engine.config import PROJECT_ROOT
from ledger_engine.errors import MigrationError

SQL_DIR = PROJECT_ROOT / "sql"
# An arbitrary constant naming "schema migration" among the platform's advisory locks.
_MIGRATION_LOCK = 7_318_001


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


def migrate(engine: Engine, sql_dir: Path = SQL_DIR) -> list[str]:
    """Apply every migration not yet applied; return the versions applied now."""
    applied_now: list[str] = []
    with engine.begin() as conn:
        conn.execute(text("SELECT pg_advisory_xact_lock(:lock)"), {"lock": _MIGRATION_LOCK})
        # Only the schema's owner may create tables: a writer or reader login connecting to an
        # up-to-date database must get past this without touching DDL.
        if conn.execute(text("SELECT to_regclass('ledger_schema_migrations')")).scalar() is None:
            conn.execute(
                text(
                    "CREATE TABLE ledger_schema_migrations ("
                    " version text PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,"
                    " applied_at timestamptz NOT NULL DEFAULT clock_timestamp())"
                )
            )
        done = dict(
            conn.execute(text("SELECT version, checksum FROM ledger_schema_migrations")).all()
        )
        for migration in migrations(sql_dir):
            if migration.version in done:
                if done[migration.version] != migration.checksum:
                    raise MigrationError(
                        f"migration {migration.path.name} changed after it was applied"
                    )
                continue
            conn.exec_driver_sql(migration.sql)
            conn.execute(
                text(
                    "INSERT INTO ledger_schema_migrations (version, name, checksum)"
                    " VALUES (:version, :name, :checksum)"
                ),
                {
                    "version": migration.version,
                    "name": migration.path.name,
                    "checksum": migration.checksum,
                },
            )
            applied_now.append(migration.version)
    return applied_now
