"""What starts the `ledger_reconcile` DAG when a statement lands: an Airflow event trigger.

`StatementLanded` is the trigger of the statement inbox's `AssetWatcher`
(`dags/ledger_reconcile.py`). Airflow's triggerer runs it for as long as the DAG is deployed;
each event it yields updates the `ledger_statements` asset, and the asset's update starts a
DAG run (events that arrive while a run is queued start no second one).

Every `poll_seconds` it lists the inbox folder of each declared source and fires once for the
files no reconciliation run has loaded yet, judged the way the loader itself judges them
(`reconcile.inbox`: hidden names are files still landing, and a file is known by its name,
size and modification time, `store.statements.seen_files`). It remembers what it has fired
for, so that a file waiting for its run fires once, not at every poll. After a restart of
the triggerer a file still waiting fires once more; its second run finds it loaded and
records runs that open and close nothing.

The DAG processor imports this module to build the watcher, so it imports only Airflow's
trigger base at module level: the settings, the ledger, its declaration and the store are
read inside the triggerer, from the triggerer's own `LEDGER_*` environment, when the trigger
first looks. If it cannot look (the database is down, the declaration has a mistake) it
logs why and looks again at the next poll.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow.triggers.base import BaseEventTrigger, TriggerEvent

CLASSPATH = "ledger_engine.reconcile.trigger.StatementLanded"


@dataclass(frozen=True)
class _Landed:
    """A statement file as it lies in a source's folder."""

    source: str
    folder: str
    name: str
    size: int
    modified_ns: int

    @property
    def shown(self) -> str:
        return f"{self.folder}/{self.name}"


class StatementLanded(BaseEventTrigger):
    """Fires when a statement file no reconciliation run has loaded lands in the inbox folder
    of a declared source (see the module); its event's payload names the files,
    `{"statements": ["<source folder>/<file name>", ...]}`."""

    def __init__(self, poll_seconds: float = 30.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.poll_seconds = float(poll_seconds)
        self.polls = 0  # how many times it has looked, for its log and for tests

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return CLASSPATH, {"poll_seconds": self.poll_seconds}

    async def run(self) -> AsyncIterator[TriggerEvent]:
        inbox = _Inbox()
        try:
            while True:
                try:
                    landed = await asyncio.to_thread(inbox.new_statements)
                except Exception:
                    self.log.warning(
                        "could not look for new statements; looking again in %.0f s",
                        self.poll_seconds,
                        exc_info=True,
                    )
                    landed = []
                self.polls += 1
                if landed:
                    shown = [file.shown for file in landed]
                    self.log.info("statements landed: %s", ", ".join(shown))
                    yield TriggerEvent({"statements": shown})
                await asyncio.sleep(self.poll_seconds)
        finally:
            inbox.close()


class _Inbox:
    """The statement inbox as the trigger sees it: the platform opened on first use, and the
    files it has already accounted for (fired for, or found loaded)."""

    def __init__(self) -> None:
        self.known: set[_Landed] = set()
        self._opened: tuple[Any, Any, Any] | None = None  # settings, ledger, engine

    def new_statements(self) -> list[_Landed]:
        """The files landed since the last look that no run has loaded, in name order."""
        from ledger_engine.reconcile.job import declared_sources
        from ledger_engine.store.statements import seen_files

        settings, ledger, engine = self._open()
        try:
            sources = declared_sources(settings, ledger)
        except FileNotFoundError:
            return []  # the ledger reconciles against nothing (yet)
        landed = {
            file
            for source in sources.sources.values()
            for file in _listed(source.name, source.folder, settings.statements / source.folder)
        }
        self.known &= landed  # forget files taken away
        fresh = landed - self.known
        loaded: set[_Landed] = set()
        for source in sorted({file.source for file in fresh}):
            seen = seen_files(engine, source)
            loaded |= {
                file
                for file in fresh
                if file.source == source and (file.name, file.size, file.modified_ns) in seen
            }
        self.known |= fresh
        return sorted(fresh - loaded, key=lambda file: (file.folder, file.name))

    def close(self) -> None:
        if self._opened is not None:
            self._opened[2].dispose()
            self._opened = None

    def _open(self) -> tuple[Any, Any, Any]:
        if self._opened is None:
            from ledger_engine.apps import load_ledger
            from ledger_engine.config import Settings
            from ledger_engine.store.database import open_views

            settings = Settings.from_env()
            ledger = load_ledger(settings.app)
            self._opened = (settings, ledger, open_views(settings, ledger))
        return self._opened


def _listed(source: str, folder: str, path: Path) -> set[_Landed]:
    """The statement files lying whole in a source's folder (hidden names are still landing)."""
    if not path.is_dir():
        return set()
    found = set()
    for entry in path.iterdir():
        if entry.name.startswith(".") or not entry.is_file():
            continue
        stat = entry.stat()
        found.add(_Landed(source, folder, entry.name, stat.st_size, stat.st_mtime_ns))
    return found
