"""Watching an inbox for files that land: the poll loop of the ledger's Airflow event triggers.

An asset's `AssetWatcher` runs an event trigger in Airflow's triggerer; each event it yields
updates the asset, and the asset's update starts a run of the DAGs scheduled on it (events
that arrive while a run is queued start no second one). Two inboxes are watched this way:
event files (`ledger_engine.pipeline.trigger.EventsLanded`, which starts `ledger_pipeline`)
and statements (`ledger_engine.reconcile.trigger.StatementLanded`, `ledger_reconcile`). They
differ only in what a landed file is and how a run records that it took one; the rest is here:

- `LandedFilesTrigger` looks every `poll_seconds`, and fires once for the files that have
  landed whole and that no run has taken; a look that fails (the database is down, the
  declaration has a mistake) is logged and tried again at the next poll;
- `Accounted` remembers what it has fired for, so that a file waiting for its run fires once,
  not at every poll (after a restart of the triggerer a file still waiting fires once more:
  its run finds nothing new and changes nothing);
- what lies whole in a folder is `ledger_engine.landing.files.whole_files`'s to list.

The DAG processor imports the triggers to build the watchers, so this module imports only
Airflow's trigger base: what a trigger needs of the platform (settings, ledger, database) it
opens inside the triggerer, from the triggerer's own `LEDGER_*` environment, on first look.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Hashable, Iterable
from typing import Any, Generic, Protocol, TypeVar

from airflow.triggers.base import BaseEventTrigger, TriggerEvent

File = TypeVar("File", bound=Hashable)


class Inbox(Protocol):
    """What a trigger watches: `new_files()` names the files landed and not taken since the
    last look (each once), `close()` lets go of what looking opened."""

    def new_files(self) -> list[str]: ...

    def close(self) -> None: ...


class Accounted(Generic[File]):
    """The files a trigger has accounted for (fired for, or found taken by a run)."""

    def __init__(self) -> None:
        self.known: set[File] = set()

    def fresh(self, landed: Iterable[File], taken: Callable[[set[File]], set[File]]) -> set[File]:
        """Of the files `landed` now, those not accounted for before and not `taken` (asked
        only of the files not accounted for); all of them are accounted for from now on."""
        landed = set(landed)
        self.known &= landed  # forget files taken away, so that one landed again counts
        fresh = landed - self.known
        self.known |= fresh
        return fresh - taken(fresh) if fresh else set()


class LandedFilesTrigger(BaseEventTrigger):
    """Fires, every `poll_seconds` at most, for the files landed in an inbox that no run has
    taken (see the module); its event's payload names them, `{PAYLOAD_KEY: [name, ...]}`.

    A subclass names its `CLASSPATH` (where the triggerer finds it), `PAYLOAD_KEY` and opens
    its `Inbox` in `inbox()`."""

    CLASSPATH = ""
    PAYLOAD_KEY = "files"

    def __init__(self, poll_seconds: float = 30.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.poll_seconds = float(poll_seconds)
        self.polls = 0  # how many times it has looked, for its log and for tests

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return self.CLASSPATH, {"poll_seconds": self.poll_seconds}

    def inbox(self) -> Inbox:
        raise NotImplementedError

    async def run(self) -> AsyncIterator[TriggerEvent]:
        inbox = self.inbox()
        try:
            while True:
                try:
                    landed = await asyncio.to_thread(inbox.new_files)
                except Exception:
                    self.log.warning(
                        "could not look for new %s; looking again in %.0f s",
                        self.PAYLOAD_KEY,
                        self.poll_seconds,
                        exc_info=True,
                    )
                    landed = []
                self.polls += 1
                if landed:
                    self.log.info("%s landed: %s", self.PAYLOAD_KEY, ", ".join(landed))
                    yield TriggerEvent({self.PAYLOAD_KEY: landed})
                await asyncio.sleep(self.poll_seconds)
        finally:
            inbox.close()
