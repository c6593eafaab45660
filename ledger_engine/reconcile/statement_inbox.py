"""Loading the statements that have landed in the statement inbox, exactly once each.

Each source has a folder of its own in the inbox, named from its label (`Source.folder`).
A file lands there whole (written under a hidden name, a leading `.`, and renamed, as event
files are): hidden files are passed over. Files are taken source by source in name order,
each parsed in its source's format and kept in its own transaction
(`reconcile.storage.statements.record_file`), so a run that stops half-way leaves every
file either kept or untouched, and the next run takes up the rest. A file the store cannot take
is kept as rejected with its reason, and the run goes on: no file stops the others (one that
cannot be read from its folder is named with its reason and waits for the next run). A file
already landed with the same name, size and modification time is passed over without being
read.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import Engine

from ledger_engine.landing.files import land_whole, whole_files
from ledger_engine.reconcile.formats import parse_statement
from ledger_engine.reconcile.sources import Source, Sources
from ledger_engine.reconcile.storage.statements import (
    UNREADABLE,
    FileOutcome,
    LandedFile,
    record_file,
    seen_files,
)


def load_statements(
    engine: Engine,
    sources: Sources,
    inbox: Path,
    on_file: Callable[[FileOutcome], None] | None = None,
) -> list[FileOutcome]:
    """Keep every statement file new in `inbox` (see the module); the outcome of each file
    read, in the order they were taken."""
    outcomes: list[FileOutcome] = []
    for source in sorted(sources.sources.values(), key=lambda s: s.folder):
        for path in _unseen(engine, source, inbox_folder(inbox, source)):
            try:
                landed = _read(source, path)
            except OSError as failed:  # not recorded: it waits, the run goes on
                outcome = _unreadable(source, path, failed)
            else:
                outcome = record_file(
                    engine,
                    landed,
                    table=source.table,
                    file_format=source.format,
                    parse=lambda raw, source=source: parse_statement(raw, source),
                    sources_digest=sources.digest,
                )
            outcomes.append(outcome)
            if on_file is not None:
                on_file(outcome)
    return outcomes


def inbox_folder(inbox: Path, source: Source) -> Path:
    """The folder of the statement inbox `inbox` that `source`'s files land in."""
    return inbox / source.folder


def make_folders(inbox: Path, sources: Sources) -> list[Path]:
    """Create every source's inbox folder that does not exist yet (so that a person finds
    where to put files before any has landed); the folders, in the sources' order."""
    folders = [inbox_folder(inbox, source) for source in sources.sources.values()]
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
    return folders


def land_statement(inbox: Path, source: Source, name: str, raw: bytes) -> Path:
    """Land the statement file `raw` as `name` in `source`'s inbox folder, whole: written under
    a hidden name and renamed into place, so a loader never reads half of it."""
    folder = inbox_folder(inbox, source)
    folder.mkdir(parents=True, exist_ok=True)
    return land_whole(folder / _plain_name(name), lambda handle: handle.write(raw))


def land_statement_file(inbox: Path, source: Source, path: Path, name: str | None = None) -> Path:
    """Land a copy of the file at `path` in `source`'s inbox folder as `name` (default: its own
    name), whole (`land_statement`); `FileExistsError` if a file of that name lies there
    already, which is never replaced: it may not have been loaded yet."""
    folder = inbox_folder(inbox, source)
    folder.mkdir(parents=True, exist_ok=True)
    with open(path, "rb") as original:
        return land_whole(
            folder / _plain_name(name or path.name),
            lambda handle: shutil.copyfileobj(original, handle),
            replace=False,
        )


def waiting_files(engine: Engine, source: Source, inbox: Path) -> list[Path]:
    """The files lying whole in `source`'s folder that no run has loaded yet, in name order:
    the next run takes them."""
    return _unseen(engine, source, inbox_folder(inbox, source))


def _plain_name(name: str) -> str:
    """`name` as a file of the folder: one plain name, not hidden (the loader passes over
    hidden names: files still landing)."""
    if not name or name != Path(name).name or name.startswith(".") or name in ("..", "."):
        raise ValueError(f"a statement file's name must be a plain file name, not {name!r}")
    return name


def _unseen(engine: Engine, source: Source, folder: Path) -> list[Path]:
    """The whole files of `folder` not landed before (known by name, size and modification
    time), in name order."""
    seen = seen_files(engine, source.name)
    unseen = []
    for path in sorted(whole_files(folder), key=lambda p: p.name):
        stat = path.stat()
        if (path.name, stat.st_size, stat.st_mtime_ns) not in seen:
            unseen.append(path)
    return unseen


def _read(source: Source, path: Path) -> LandedFile:
    """The file at `path`, as it lies in `source`'s folder."""
    modified_ns = path.stat().st_mtime_ns
    return LandedFile(source.name, path.name, path.read_bytes(), modified_ns)


def _unreadable(source: Source, path: Path, failed: OSError) -> FileOutcome:
    """The outcome of a file that could not be read (taken away meanwhile, no permission):
    nothing is recorded of it, so the next run tries it again once the cause is fixed."""
    return FileOutcome(
        source.name,
        path.name,
        UNREADABLE,
        file_id=0,
        entries=0,
        rejected=0,
        reason=(
            f"cannot be read: {failed.strerror or failed} ({path}); it waits: once it can be "
            "read, the next run takes it"
        ),
    )
