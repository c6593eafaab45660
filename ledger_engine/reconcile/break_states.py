"""A break's states, spelled once: its status, how it was resolved, the steps of its history,
and where a write-off posted for it stands. The database holds these words (the CHECK
constraints of sql/0019 and sql/0020 list them); the storage, the runs and the pages name them
from here.

A break is `OPEN` until it is `RESOLVED`, by one of:
- `MATCHED`: a later run's rule matched its items;
- `MANUAL_MATCH`: a person matched it with other breaks (`ledger breaks match`, the workbench);
- `WRITTEN_OFF`: its write-off was settled (or had nothing to adjust);
- `SUPERSEDED`: a later run found its items in another break.

Its history holds a step for each change: `OPENED`, `WRITE_OFF_POSTED` (the adjusting event
landed, the break still open) and the resolution's own step.

A write-off's stages (`write_off_stage`), from the adjusting event's request and its outcome
in the ledger (`core.records.APPLIED` or `REJECTED`, None while not committed):
`POSTED` (in the event inbox, waiting for the pipeline) -> `APPLIED` (committed, waiting for
reconciliation) -> `SETTLED` (the break written off); or `REJECTED` (the ledger refused it: a
new write-off posts a new request). A write-off of nothing (a duplicate) is `NOTHING_TO_ADJUST`
at once.
"""

from __future__ import annotations

from enum import Enum

from ledger_engine.core.records import APPLIED

# A break's status.
OPEN = "open"
RESOLVED = "resolved"
# How a resolved break was resolved: its resolution, and the step of its history that did it.
MATCHED = "matched"
MANUAL_MATCH = "manual_match"
WRITTEN_OFF = "written_off"
SUPERSEDED = "superseded"
# The other steps of a break's history.
OPENED = "opened"
WRITE_OFF_POSTED = "write_off_posted"


class WriteOffStage(Enum):
    """Where the write-off of a break stands (see the module)."""

    POSTED = "posted"
    APPLIED = "applied"
    REJECTED = "rejected"
    SETTLED = "settled"
    NOTHING_TO_ADJUST = "nothing to adjust"

    @property
    def waits(self) -> bool:
        """Whether its adjustment is on its way (posted or committed, not settled): the break
        may be neither written off again nor matched by hand meanwhile."""
        return self in (WriteOffStage.POSTED, WriteOffStage.APPLIED)


def write_off_stage(
    request_id: str | None, outcome: str | None, resolution: str | None = None
) -> WriteOffStage | None:
    """The stage of a break's write-off, from the request of the last adjusting event posted
    for it (None: none posted), that request's outcome in the ledger and the break's
    resolution; None for a break with no write-off."""
    if resolution == WRITTEN_OFF:
        return WriteOffStage.NOTHING_TO_ADJUST if request_id is None else WriteOffStage.SETTLED
    if request_id is None:
        return None
    if outcome is None:
        return WriteOffStage.POSTED
    return WriteOffStage.APPLIED if outcome == APPLIED else WriteOffStage.REJECTED
