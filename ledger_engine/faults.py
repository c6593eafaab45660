"""Fault injection: make the pipeline die abruptly at a named point, to prove exactly-once.

`LEDGER_FAULT=<point>[@<batch id>][:<action>]` arms one fault for a process:

- `point`: one of `FAULT_POINTS`, in the order a micro-batch reaches them, plus the audits.
- `@<batch id>`: only in that micro-batch (default: the first batch that reaches the point).
- `action`: `exit` (default) ends the process at once with `os._exit(FAULT_EXIT_CODE)`: no
  `finally` blocks, no flushing, no goodbye to PostgreSQL or Spark, as a power cut or SIGKILL
  would; `pause` stops the process there until something kills it (to hold the run lease in
  a test of concurrent runs).

Tests running the pipeline in their own process pass a `FaultSwitch` with their own action
instead (for example, restarting the database at a point).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

AFTER_READ = "after_read"  # the batch's files are read; nothing is staged
DURING_EXECUTION = "during_execution"  # the first round ran (a later round's rows staged)
AFTER_STAGING = "after_staging"  # every task has reported its journal; no commit yet
BEFORE_COMMIT = "before_commit"  # inside the commit's transaction, everything written, no COMMIT
AFTER_COMMIT = "after_commit"  # committed; the streaming checkpoint has not advanced
# The Merkle part ran and the mark's transaction is open; the expectations are under way.
DURING_AUDITS = "during_audits"

FAULT_POINTS = (
    AFTER_READ,
    DURING_EXECUTION,
    AFTER_STAGING,
    BEFORE_COMMIT,
    AFTER_COMMIT,
    DURING_AUDITS,
)
ACTIONS = ("exit", "pause")
# Distinct from Python's own exit codes, so a test can tell an injected fault from a crash.
FAULT_EXIT_CODE = 86

FaultAction = Callable[[str, int | None], None]


@dataclass(frozen=True)
class FaultPlan:
    """Where to fail (`point`, optionally only in batch `batch_id`) and how (`action`)."""

    point: str
    batch_id: int | None = None
    action: str = "exit"

    def __post_init__(self) -> None:
        if self.point not in FAULT_POINTS:
            known = ", ".join(FAULT_POINTS)
            raise ValueError(f"unknown fault point {self.point!r}; known: {known}")
        if self.action not in ACTIONS:
            raise ValueError(f"unknown fault action {self.action!r}; known: {', '.join(ACTIONS)}")

    @classmethod
    def parse(cls, text: str) -> FaultPlan:
        """`after_commit`, `after_commit@2`, `after_staging:pause`, `during_execution@1:exit`."""
        where, _, action = text.strip().partition(":")
        point, _, batch = where.partition("@")
        try:
            batch_id = int(batch) if batch else None
        except ValueError:
            raise ValueError(f"LEDGER_FAULT: batch id must be an integer in {text!r}") from None
        return cls(point, batch_id, action or "exit")

    def matches(self, point: str, batch_id: int | None) -> bool:
        return point == self.point and (self.batch_id is None or self.batch_id == batch_id)


def _die(point: str, batch_id: int | None) -> None:
    where = point if batch_id is None else f"{point} in batch {batch_id}"
    sys.stderr.write(f"LEDGER_FAULT: dying at {where}\n")
    sys.stderr.flush()
    os._exit(FAULT_EXIT_CODE)


def _pause(point: str, batch_id: int | None) -> None:
    sys.stderr.write(f"LEDGER_FAULT: paused at {point} (batch {batch_id}); kill me\n")
    sys.stderr.flush()
    while True:
        time.sleep(3600)


class FaultSwitch:
    """The pipeline calls `reach(point, batch_id)` at every fault point; an armed switch acts
    there once, an unarmed one (`FaultSwitch(None)`) does nothing."""

    def __init__(self, plan: FaultPlan | None, action: FaultAction | None = None) -> None:
        self.plan = plan
        self._action = action or (_pause if plan is not None and plan.action == "pause" else _die)
        self.fired = False

    @classmethod
    def from_setting(cls, text: str | None) -> FaultSwitch:
        return cls(FaultPlan.parse(text) if text else None)

    def reach(self, point: str, batch_id: int | None = None) -> None:
        assert point in FAULT_POINTS, point
        if self.plan is None or self.fired or not self.plan.matches(point, batch_id):
            return
        self.fired = True
        self._action(point, batch_id)


NO_FAULTS = FaultSwitch(None)
