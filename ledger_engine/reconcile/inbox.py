"""Loading the statements that have landed in the statement inbox, exactly once each.

Each source has a folder of its own in the inbox, named from its label (`Source.folder`).
A file lands there whole (written under a hidden name, a leading `.`, and renamed, as event
files are): hidden files are passed over. Files are taken source by source in name order,
each parsed in its source's format and kept in its own transaction
(`ledger_engine.store.statements.record_file`), so a run that stops half-way leaves every
file either kept or untouched, and the next run takes up the rest. A file already landed
with the same name, size and modification time is passed over without being read.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from sqlalchemy import Engine

from ledger_engine.reconcile.formats import parse_statement
from ledger_engine.reconcile.sources import Source, Sources
from ledger_engine.store.statements import FileOutcome, LandedFile, record_file, seen_files


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
        for landed in _new_files(engine, source, inbox / source.folder):
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


def land_statement(inbox: Path, source: Source, name: str, raw: bytes) -> Path:
    """Land the statement file `raw` as `name` in `source`'s inbox folder, whole: written under
    a hidden name and renamed into place, so a loader never reads half of it."""
    folder = inbox / source.folder
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    hidden = folder / f".{name}.tmp"
    hidden.write_bytes(raw)
    os.replace(hidden, path)
    return path


def _new_files(engine: Engine, source: Source, folder: Path) -> Iterator[LandedFile]:
    """The files of `folder` not landed before, read one at a time."""
    if not folder.is_dir():
        return
    seen = seen_files(engine, source.name)
    for path in sorted(folder.iterdir(), key=lambda p: p.name):
        if path.name.startswith(".") or not path.is_file():
            continue
        stat = path.stat()
        if (path.name, stat.st_size, stat.st_mtime_ns) in seen:
            continue
        yield LandedFile(source.name, path.name, path.read_bytes(), stat.st_mtime_ns)
