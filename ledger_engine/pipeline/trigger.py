"""What starts the `ledger_pipeline` DAG when event files land: an Airflow event trigger.

`EventsLanded` is the trigger of the event inbox's `AssetWatcher` (`dags/ledger_pipeline.py`);
its poll loop, what it remembers and when it fires are the ledger's landing triggers'
(`ledger_engine.landing.trigger`). Every `poll_seconds` it lists the inbox (`LEDGER_INBOX`) as the
pipeline's streaming source does (`runtime.spark.streaming`: `*.jsonl`, hidden names `.x` and
`_x` skipped, so a file written under a hidden name and renamed counts once it is whole) and
fires once for the files no committed batch took (`ledger_batches.input_files`, the system of
record's own account: a file Spark planned into a batch that failed is not taken, and the
next run does take it).

A file that lands while a run is going may be taken by that run and still fire (it was not
committed when the trigger looked): the run it starts finds nothing new and commits no batch,
without starting Spark (`pipeline.job.run_pipeline` looks first). The settings, the ledger and
the database are opened inside the triggerer when the trigger first looks (the DAG processor
imports this module to build the watcher).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ledger_engine.landing.trigger import Accounted, LandedFilesTrigger
from ledger_engine.pipeline.event_inbox import landed_event_files

CLASSPATH = "ledger_engine.pipeline.trigger.EventsLanded"


@dataclass(frozen=True)
class _Landed:
    """An event file as it lies in the inbox."""

    name: str
    size: int
    modified_ns: int


class EventsLanded(LandedFilesTrigger):
    """Fires when event files no committed batch took land whole in the inbox (see the
    module); its event's payload names them, `{"events": ["<file name>", ...]}`."""

    CLASSPATH = CLASSPATH
    PAYLOAD_KEY = "events"

    def inbox(self) -> _Inbox:
        return _Inbox()


class _Inbox:
    """The event inbox as the trigger sees it: the platform opened on first use, and the
    files it has already accounted for."""

    def __init__(self) -> None:
        self.accounted: Accounted[_Landed] = Accounted()
        self._opened: tuple[Any, Any] | None = None  # settings, engine

    def new_files(self) -> list[str]:
        """The event files landed since the last look that no batch took, in name order."""
        from ledger_engine.store.batch_inputs import committed_files

        settings, engine = self._open()
        landed = [
            _Landed(path.name, stat.st_size, stat.st_mtime_ns)
            for path in landed_event_files(settings.inbox)
            for stat in [path.stat()]
        ]

        def taken(fresh: set[_Landed]) -> set[_Landed]:
            committed = committed_files(engine, (file.name for file in fresh))
            return {file for file in fresh if file.name in committed}

        return sorted(file.name for file in self.accounted.fresh(landed, taken))

    def close(self) -> None:
        if self._opened is not None:
            self._opened[1].dispose()
            self._opened = None

    def _open(self) -> tuple[Any, Any]:
        if self._opened is None:
            from ledger_engine.config import Settings
            from ledger_engine.store.database import open_views

            settings = Settings.from_env()
            self._opened = (settings, open_views(settings))
        return self._opened
