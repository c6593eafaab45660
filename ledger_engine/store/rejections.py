"""The lines the pipeline rejected, as a person looks for them (`ledger rejections`): by the
file and line they came from, with the reason and the raw bytes the system of record keeps
(`ledger_rejections` joined to `ledger_events`, sql/0001_core.sql)."""

from __future__ import annotations

from dataclasses import dataclass

from psycopg2 import errors
from sqlalchemy import Engine

from ledger_engine.store.sql_files import statement


@dataclass(frozen=True)
class RejectedLine:
    """One rejected line: where it came from, what it was, why it was rejected."""

    file: str
    line: int
    batch_id: int
    position: int
    stream: str | None
    request_id: str | None
    reason: str
    detail: str
    raw: bytes


def rejected_lines(
    engine: Engine, *, file: str | None = None, batch: int | None = None, limit: int = 1000
) -> list[RejectedLine]:
    """The rejected lines in batch order, of `file` and of `batch` where given, at most
    `limit`; none while the ledger's tables do not exist yet."""
    with engine.connect() as conn:
        cursor = conn.connection.cursor()
        try:
            cursor.execute(
                statement("rejections/rejected_lines"),
                {"file": file, "batch": batch, "limit": limit},
            )
        except errors.UndefinedTable:
            return []
        return [RejectedLine(*row[:-1], raw=bytes(row[-1])) for row in cursor.fetchall()]
