"""Where a Spark task's time goes (wall and CPU), reported to the driver.

A task keeps a `TaskClock`: each `lap(phase)` charges the time since the previous lap to a
phase (waiting for input, decoding, reading rows, executing, staging, ...). At its end the
task emits the totals as a PROFILE parcel; `task_profile` sums them on the
driver per stage and phase, and keeps the slowest task of each stage, which is what the stage
cost in wall time. The benchmark prints it.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Iterable, Mapping
from typing import Any

from pyspark import TaskContext

from ledger_engine.core.stopwatch import Stopwatch

PICKLE = pickle.HIGHEST_PROTOCOL


class TaskClock(Stopwatch):
    """Phase timings of one task (wall, and the task process's CPU), and its items."""

    def __init__(self, stage: str) -> None:
        super().__init__(time.process_time)
        self.stage = stage
        self.items = 0

    def report(self) -> bytes:
        """What the task measured, pickled (read by `task_profile`)."""
        context = TaskContext.get()
        report = {
            "stage": self.stage,
            "partition": context.partitionId() if context is not None else -1,
            "items": self.items,
            "seconds": self.seconds,
            "cpu": self.cpu_seconds,
            "total": self.elapsed(),
        }
        return pickle.dumps(report, PICKLE)


def task_profile(blobs: Iterable[bytes]) -> dict[str, dict[str, Any]]:
    """Per stage: tasks, items, seconds per phase summed over tasks, and the slowest task."""
    stages: dict[str, dict[str, Any]] = {}
    for blob in blobs:
        report = pickle.loads(blob)
        stage = stages.setdefault(
            report["stage"], {"tasks": 0, "items": 0, "seconds": {}, "cpu": {}, "slowest": 0.0}
        )
        stage["tasks"] += 1
        stage["items"] += report["items"]
        stage["slowest"] = max(stage["slowest"], report["total"])
        for kind in ("seconds", "cpu"):
            add_seconds(stage[kind], report[kind])
    return stages


def add_seconds(into: dict[str, float], seconds: Mapping[str, float]) -> None:
    """Add `seconds` (by phase or step) into `into`, phase by phase."""
    for phase, value in seconds.items():
        into[phase] = into.get(phase, 0.0) + value
