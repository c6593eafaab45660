"""Building event files and lines for the tests: what lands in an inbox.

Events are written as the platform writes them (`ledger_engine.core.ingest.event_to_line`:
the envelope `{"stream", "request_id", "payload"}` as compact JSON). A test that needs a line
no event makes (an envelope with a field too many, text that is not JSON) states it: as an
envelope dict it changes (`envelope`, then `envelope_line`), or as raw bytes.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from typing import Any

from ledger_engine.core.ingest import event_to_line
from ledger_engine.core.records import Event


def event_file(events: Iterable[Event | bytes]) -> bytes:
    """The JSON-lines content of a landed file holding `events`, one envelope per line, each
    ending in a newline. A `bytes` item is a raw line, written as it is (a line that is
    deliberately not a valid event)."""
    return b"".join(
        (item if isinstance(item, bytes) else event_line(item)) + b"\n" for item in events
    )


def event_line(event: Event) -> bytes:
    """`event` as one line of a file (`event_to_line`, UTF-8), without its newline."""
    return event_to_line(event).encode("utf-8")


def envelope(event: Event) -> dict[str, Any]:
    """The envelope of `event` as a dict a test may change (its payload a copy of the
    event's), to write with `envelope_line`."""
    payload = copy.deepcopy(event.payload)
    return {"stream": event.stream, "request_id": event.request_id, "payload": payload}


def envelope_line(fields: Mapping[str, Any]) -> bytes:
    """An envelope's `fields` written as `event_to_line` writes an event's (compact JSON,
    UTF-8), whatever keys it has; without its newline."""
    return json.dumps(fields, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def nested(levels: int, inner: Any = 1) -> Any:
    """`inner` wrapped in `levels` arrays (`[[1]]` for two levels): a payload value nested as
    deep as a test needs, to meet the parser's nesting limit."""
    for _ in range(levels):
        inner = [inner]
    return inner
