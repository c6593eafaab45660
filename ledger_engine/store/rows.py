"""Reading one committed row of a declared table (`ledger balance`): its value and the batch
that last changed it, through the `ledger_rows` view, which the ledger's migration generates
over every declared table (keys as text, values as JSON)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine

from ledger_engine.store.sql_files import statement

_COMMITTED_ROW = statement("rows/committed_row")


@dataclass(frozen=True)
class CommittedRow:
    """A row's value as committed (decoded from JSON) and the batch that last changed it."""

    value: Any
    last_batch_id: int


def committed_row(engine: Engine, table: str, key: str) -> CommittedRow | None:
    """The row `key` of the declared `table` as committed, or None if there is none."""
    with engine.connect() as conn:
        cursor = conn.connection.cursor()
        cursor.execute(_COMMITTED_ROW, {"table": table, "key": key})
        found = cursor.fetchone()
    return None if found is None else CommittedRow(*found)
