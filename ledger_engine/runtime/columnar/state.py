"""A state shipped as Arrow: what a run starts from, sent to every worker once.

Pickling a state of millions of rows as Python dictionaries costs the driver about a second
per two million rows, and every worker as long again to load. `ColumnarState` holds each
table as a sealed Arrow table of (key, value) columns (`columnar.typed`): built from the
mappings in C-speed conversions, shipped as bytes, and turned back into a dictionary per table
only where a task first reads that table, once per worker process (the broadcast's value is
kept by the worker between tasks).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.runtime.columnar.parcels import opened, sealed
from ledger_engine.runtime.columnar.typed import key_array, value_array, values_of


class ColumnarState:
    """Each table's rows before a run, as sealed (key, value) Arrow tables."""

    def __init__(self, ledger: StreamingLedger, state: Mapping[str, Mapping[Any, Any]]) -> None:
        self.sealed: dict[str, bytes] = {}
        for name, table in ledger.tables.items():
            rows = state.get(name, {})
            columns = pa.table(
                {
                    "key": key_array(table, list(rows.keys())),
                    "value": value_array(table, list(rows.values())),
                }
            )
            self.sealed[name] = sealed(columns)
        self._rows: dict[str, dict[Any, Any]] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"sealed": self.sealed}  # not the ledger: a broadcast is pickled, not cloudpickled

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.sealed = state["sealed"]
        self._rows = {}

    def rows(self, name: str) -> dict[Any, Any]:
        """Table `name`'s rows as a dictionary (built on first use in this process)."""
        found = self._rows.get(name)
        if found is None:
            columns = opened(self.sealed[name])
            values = values_of(columns.column("value"))
            found = self._rows[name] = dict(
                zip(columns.column("key").to_pylist(), values, strict=True)
            )
        return found
