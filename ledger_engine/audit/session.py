"""The PostgreSQL settings the batch audit's queries run under.

Every query of the batch audit reads a range of batches from the log tables' primary keys,
and the range is data (`ledger_audit_scope`, or numbers read in the same consistent read), so
PostgreSQL plans it without knowing how many rows it holds: it guesses 0.5% of the table, on a
large ledger a few tens of thousands of rows for the 3x10^5 change-log entries of a 10^5-event
batch. Four defaults then cost more than the checks themselves, or far more (measured on a
10^5-event batch over 10^6 events of history):

- `enable_indexscan`: for that guess the planner reads the range by a plain index scan,
  visiting a heap page per row (327,700 buffer visits, 0.45 s for one table's entries), where
  a bitmap scan visits each page once (6,800, 0.09 s). Off, ranges are read by bitmap scans
  and single keys by bitmap probes (one page, as before); index-only scans are unaffected;
- `enable_nestloop`: for the same guesses the planner would join two sets of a batch's size
  (its events and their executed request ids, its keys and their rows) by a nested loop over
  one of them, that is in time the product of their sizes. Off, such joins are hash joins;
  a lookup that must be a nested loop (a key's pointer, an event's row) is written as a
  LATERAL subquery with `LIMIT 1`, which stays one;
- `jit`: the same guesses put the larger rules above the JIT threshold, and compiling them
  took 0.6 s of a 2.8 s rule. Off;
- `work_mem`: sorting or hashing a batch's entries (a key's changes in order, an event's
  entries) spilled to temporary files at 4 MB. 64 MB holds a 10^5-event batch's.

The Great Expectations batch suite's sessions get them through the connection's options
(`expectations.suites.SuiteSpec.session_settings`); the audit's own transactions set them locally
(`set_locally`). The full audit keeps PostgreSQL's defaults.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import Connection, text

from ledger_engine.audit.sql_files import audit_query

BATCH_AUDIT_SETTINGS: Mapping[str, str] = {
    "enable_indexscan": "off",
    "enable_nestloop": "off",
    "jit": "off",
    "work_mem": "64MB",
}

_SET_LOCAL = text(audit_query("session_set_locally"))


def set_locally(conn: Connection, settings: Mapping[str, str] = BATCH_AUDIT_SETTINGS) -> None:
    """Apply `settings` to the transaction `conn` is in, until it ends."""
    for name, value in settings.items():
        conn.execute(_SET_LOCAL, {"name": name, "value": value})
