"""What the system of record says of the event inbox: which landed files a committed batch took
(`ledger_batches.input_files`, the file names of each batch's input)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from psycopg2 import errors
from sqlalchemy import Engine

from ledger_engine.store.sql_files import statement


def committed_files(engine: Engine, names: Iterable[str]) -> set[str]:
    """Of the event file `names`, those a committed batch took; none while the ledger's tables
    do not exist yet (no run has ever committed)."""
    names = sorted(set(names))
    if not names:
        return set()
    with engine.connect() as conn:
        cursor = conn.connection.cursor()
        try:
            cursor.execute(statement("batch_inputs/committed_files"), {"names": names})
        except errors.UndefinedTable:
            return set()
        return {name for (name,) in cursor.fetchall()}


@dataclass(frozen=True)
class TakenFile:
    """A landed event file a committed batch took: the batch and when it committed."""

    name: str
    batch_id: int
    committed_at: datetime


def taken_files(engine: Engine, names: Iterable[str]) -> dict[str, TakenFile]:
    """Of the event file `names`, those a committed batch took, by name (the first batch that
    took each); none while the ledger's tables do not exist yet."""
    names = sorted(set(names))
    if not names:
        return {}
    with engine.connect() as conn:
        cursor = conn.connection.cursor()
        try:
            cursor.execute(statement("batch_inputs/taken_files"), {"names": names})
        except errors.UndefinedTable:
            return {}
        found: dict[str, TakenFile] = {}
        for name, batch_id, committed_at in cursor.fetchall():
            found.setdefault(name, TakenFile(name, batch_id, committed_at))
        return found
