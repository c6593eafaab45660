"""Building event files for the tests: what lands in an inbox."""

from __future__ import annotations

from collections.abc import Iterable

from ledger_engine.core.ingest import event_to_line
from ledger_engine.core.records import Event


def event_file(events: Iterable[Event]) -> bytes:
    """The JSON-lines content of a landed file holding `events`, one envelope per line."""
    return "".join(event_to_line(event) + "\n" for event in events).encode("utf-8")
