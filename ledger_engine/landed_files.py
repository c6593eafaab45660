"""What lies whole in a landing folder, listed as its reader lists it: a writer lands a file
under a hidden name, then renames it, so a hidden name is a file still landing.

Both inboxes list their folders through `whole_files`: the event inbox for the pipeline and its
watcher (`pipeline.inbox.landed_event_files`), the statement folders for the statement watcher
(`reconcile.trigger`). It imports nothing of Airflow or Spark, so a pipeline run and a trigger
both can.
"""

from __future__ import annotations

from pathlib import Path


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
