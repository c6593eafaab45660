"""What became of every file lying in the event inbox, for people (`ledger inbox`, and what
`ledger run` says of the files it leaves aside): taken by a committed batch, waiting for the
next run, or ignored, with why.

The pipeline reads `*.jsonl` files lying whole in the inbox itself (`event_inbox`), each name
once: a file of another extension, a hidden name (a file still landing, or set aside) or a
folder is never read, and a file landed again under a name a committed batch took (a
corrected file, say) is never read either: its name was taken. Such a file is told apart from
the one the batch took by landing after that batch committed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import Engine

from ledger_engine.pipeline.event_inbox import EVENT_FILES, HIDDEN
from ledger_engine.store.batch_inputs import TakenFile, taken_files

TAKEN = "taken"
WAITING = "waiting"
IGNORED = "ignored"


@dataclass(frozen=True)
class InboxFile:
    """A file in the inbox: `state` is TAKEN (by `batch_id`), WAITING or IGNORED (`why`)."""

    name: str
    state: str
    batch_id: int | None = None
    why: str | None = None


def survey_inbox(inbox: Path, engine: Engine) -> list[InboxFile]:
    """Every entry of `inbox`, in name order, with what became of it (none without an inbox)."""
    entries = sorted(inbox.iterdir(), key=lambda p: p.name) if inbox.is_dir() else []
    events = [p for p in entries if _readable(p)]
    taken = taken_files(engine, (p.name for p in events))
    return [_state(entry, taken.get(entry.name)) for entry in entries]


def _readable(entry: Path) -> bool:
    """Whether the pipeline's reader lists `entry` at all."""
    return (
        entry.name.endswith(EVENT_FILES) and not entry.name.startswith(HIDDEN) and entry.is_file()
    )


def _state(entry: Path, taken: TakenFile | None) -> InboxFile:
    name = entry.name
    if entry.is_dir():
        return InboxFile(
            name, IGNORED, why="a folder: only files lying in the inbox itself are read"
        )
    if name.startswith(HIDDEN):
        return InboxFile(
            name,
            IGNORED,
            why="a hidden name (. or _): a file still landing, or set aside; never read",
        )
    if not name.endswith(EVENT_FILES):
        return InboxFile(
            name,
            IGNORED,
            why=f"not an event file: only *{EVENT_FILES} files are read (event files hold one "
            f"JSON envelope per line; rename it {Path(name).stem}{EVENT_FILES} if this one does)",
        )
    if taken is None:
        return InboxFile(name, WAITING)
    landed = datetime.fromtimestamp(entry.stat().st_mtime, UTC)
    if landed > taken.committed_at:
        return InboxFile(
            name,
            IGNORED,
            batch_id=taken.batch_id,
            why=f"landed again after batch {taken.batch_id} took a file of this name: a name "
            "is read once, so this file never will be; land it under a new name",
        )
    return InboxFile(name, TAKEN, batch_id=taken.batch_id)
