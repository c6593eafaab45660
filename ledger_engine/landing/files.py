"""Landing a file whole, and what lies whole in a landing folder, listed as its reader lists it:
a writer lands a file under a hidden name, then renames it (`land_whole`), so a hidden name is
a file still landing.

Every landing writes through `land_whole`: event files
(`pipeline.event_inbox.write_event_files`), write-offs' adjusting events, and statement files
(`reconcile.statement_inbox.land_statement`, `ledger statements land` and `sample`).

Both inboxes list their folders through `whole_files`: the event inbox for the pipeline and its
watcher (`pipeline.event_inbox.landed_event_files`), the statement folders for the statement watcher
(`reconcile.trigger`). It imports nothing of Airflow or Spark, so a pipeline run and a trigger
both can.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def whole_files(folder: Path, *, suffix: str = "", hidden: tuple[str, ...] = (".",)) -> list[Path]:
    """The files lying whole in `folder` whose names end with `suffix`, as the folder's reader
    lists them: no folders, and no names starting with one of `hidden` (`.name` is where
    writers land a file before renaming it); none if the folder does not exist."""
    if not folder.is_dir():
        return []
    return [
        entry
        for entry in folder.iterdir()
        if not entry.name.startswith(hidden) and entry.name.endswith(suffix) and entry.is_file()
    ]


def land_whole(target: Path, write: Callable[[BinaryIO], object], *, replace: bool = True) -> Path:
    """Land `target` whole: `write` fills a hidden file beside it (`.<name>.tmp`), which is
    flushed to disk and then renamed into place, so a reader listing the folder never sees
    half of it; the hidden file is removed if anything fails. With `replace=False`, a file
    already named `target` is kept and `FileExistsError` raised (a hard link, which never
    replaces, then the hidden name removed)."""
    hidden = target.with_name(f".{target.name}.tmp")
    try:
        with open(hidden, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        if replace:
            os.replace(hidden, target)
        else:
            os.link(hidden, target)
    finally:
        hidden.unlink(missing_ok=True)
    return target
