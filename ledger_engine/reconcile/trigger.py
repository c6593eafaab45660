"""What starts the `ledger_reconcile` DAG when a statement lands: an Airflow event trigger.

`StatementLanded` is the trigger of the statement inbox's `AssetWatcher`
(`dags/ledger_reconcile.py`); its poll loop, what it remembers and when it fires are the
ledger's landing triggers' (`ledger_engine.landing.trigger`). Every `poll_seconds` it lists the
inbox folder of each declared source and fires once for the files no reconciliation run has
loaded yet, judged the way the loader itself judges them (`reconcile.statement_inbox`: hidden
names are files still landing, and a file is known by its name, size and modification time,
`reconcile.storage.statements.seen_files`).

The settings, the ledger, its declaration and the store are read inside the triggerer when the
trigger first looks (the DAG processor imports this module to build the watcher).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ledger_engine.landing.files import whole_files
from ledger_engine.landing.trigger import Accounted, LandedFilesTrigger

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


class StatementLanded(LandedFilesTrigger):
    """Fires when a statement file no reconciliation run has loaded lands in the inbox folder
    of a declared source (see the module); its event's payload names the files,
    `{"statements": ["<source folder>/<file name>", ...]}`."""

    CLASSPATH = CLASSPATH
    PAYLOAD_KEY = "statements"

    def inbox(self) -> _Inbox:
        return _Inbox()


class _Inbox:
    """The statement inbox as the trigger sees it: the platform opened on first use, and the
    files it has already accounted for."""

    def __init__(self) -> None:
        self.accounted: Accounted[_Landed] = Accounted()
        self._opened: tuple[Any, Any, Any] | None = None  # settings, ledger, engine

    def new_files(self) -> list[str]:
        """The files landed since the last look that no run has loaded, in name order."""
        from ledger_engine.reconcile.job import declared_sources

        settings, ledger, engine = self._open()
        try:
            sources = declared_sources(settings, ledger)
        except FileNotFoundError:
            return []  # the ledger reconciles against nothing (yet)
        landed = [
            _Landed(source.name, source.folder, path.name, stat.st_size, stat.st_mtime_ns)
            for source in sources.sources.values()
            for path in whole_files(settings.statements / source.folder)
            for stat in [path.stat()]
        ]
        fresh = self.accounted.fresh(landed, lambda fresh: _loaded(engine, fresh))
        return [file.shown for file in sorted(fresh, key=lambda file: (file.folder, file.name))]

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


def _loaded(engine: Any, files: set[_Landed]) -> set[_Landed]:
    """The `files` a reconciliation run has loaded already."""
    from ledger_engine.reconcile.storage.statements import seen_files

    loaded: set[_Landed] = set()
    for source in sorted({file.source for file in files}):
        seen = seen_files(engine, source)
        loaded |= {
            file
            for file in files
            if file.source == source and (file.name, file.size, file.modified_ns) in seen
        }
    return loaded
