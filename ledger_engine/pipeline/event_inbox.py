"""Landing event files in an inbox, in the order a streaming reader must take them.

`write_event_files` writes events as JSON-lines files, one envelope `{"stream", "request_id",
"payload"}` per line (`ledger_engine.core.ingest.event_to_line`), for any ledger. Each file
appears atomically, so a streaming reader never sees half of one, and lands a millisecond or
more after the one before it: Spark's file source takes files in the order of their
modification times, in milliseconds, and orders files of the same millisecond as the
directory lists them (which is no order at all).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from ledger_engine.core.ingest import event_to_line
from ledger_engine.core.records import Event
from ledger_engine.landing.files import land_whole, whole_files

EVENT_FILES = ".jsonl"  # the streaming source's `pathGlobFilter`, `*.jsonl`
HIDDEN = (".", "_")  # names Hadoop's file listing, and so Spark's file source, skips


def landed_event_files(inbox: Path) -> list[Path]:
    """The event files lying whole in `inbox`, in name order, as the pipeline's streaming
    source lists them (`runtime.spark.streaming`): `*.jsonl` files, no hidden names (`.x`,
    `_x`: a writer lands a file under one, then renames it); none if there is no inbox."""
    return sorted(whole_files(inbox, suffix=EVENT_FILES, hidden=HIDDEN))


def write_event_files(
    events: Iterable[Event],
    inbox: Path,
    *,
    events_per_file: int = 1000,
    prefix: str = "events",
) -> list[Path]:
    """Write `events` as JSON-lines files ``<prefix>-<index:06d>.jsonl`` into `inbox`.

    Files hold `events_per_file` events each (the last may hold fewer), in event order. Each
    file is written under a hidden temporary name and renamed into place, so a reader listing
    ``*.jsonl`` only ever sees complete files, and its modification time, in milliseconds, is
    later than the file's before it, so a streaming reader takes them in this order. Returns
    the paths in order.
    """
    if events_per_file < 1:
        raise ValueError(f"events_per_file must be >= 1, got {events_per_file}")
    inbox = Path(inbox)
    inbox.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    chunk: list[str] = []

    landed_ms = -1

    def flush() -> None:
        nonlocal landed_ms
        path = inbox / f"{prefix}-{len(paths):06d}.jsonl"
        _write_atomically(path, "".join(chunk))
        landed_ms = _land_after(path, landed_ms)
        paths.append(path)
        chunk.clear()

    for event in events:
        chunk.append(event_to_line(event) + "\n")
        if len(chunk) == events_per_file:
            flush()
    if chunk:
        flush()
    return paths


def _land_after(path: Path, previous_ms: int) -> int:
    """Move `path`'s modification time past `previous_ms` if it is not already; return it, in
    milliseconds (the resolution Spark's file source reads and orders by)."""
    landed_ms = os.stat(path).st_mtime_ns // 1_000_000
    if landed_ms <= previous_ms:
        landed_ms = previous_ms + 1
        os.utime(path, ns=(landed_ms * 1_000_000, landed_ms * 1_000_000))
    return landed_ms


def _write_atomically(path: Path, text: str) -> None:
    land_whole(path, lambda handle: handle.write(text.encode("utf-8")))
