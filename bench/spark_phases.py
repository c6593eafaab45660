"""Where a Spark run's phases spend their time: wall seconds beside the executors' task
seconds, the JVM's and the Python driver's CPU, GC, shuffle and jobs, phase by phase.

Spark's status store (which the UI reads, kept even with the UI off) sums every task's
duration, GC and shuffle bytes per executor; the JVM's CPU comes from the kernel's
accounting of its process (in local mode the driver and its executor threads are one JVM),
the driver's Python CPU from `time.process_time`. A snapshot before and after a phase gives
the phase's share. Task seconds over (wall x cores) says how busy the cores were; wall with
few task seconds is the driver's (planning, job scheduling, Python).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import Any

from pyspark.sql import SparkSession

from ledger_engine.core.stopwatch import Stopwatch

_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Snapshot:
    """Cumulative counters at one moment (wall and the driver's Python CPU since the profiler
    started, the JVM's CPU since its own start, the rest per phase)."""

    wall: float
    python_cpu: float
    jvm_cpu: float
    task: float
    gc: float
    shuffle_mb: float
    tasks: int
    jobs: int

    def __sub__(self, other: Snapshot) -> Snapshot:
        return Snapshot(*(getattr(self, f.name) - getattr(other, f.name) for f in fields(Snapshot)))


class PhaseProfiler:
    """Counts each phase of a Spark run: call `mark(name)` at the end of each phase."""

    def __init__(self, spark: SparkSession) -> None:
        self._spark = spark
        self._jvm_pid = spark._jvm.ProcessHandle.current().pid()  # type: ignore[union-attr]
        self.phases: dict[str, Snapshot] = {}
        self._seen_stage = -1
        self._seen_jobs: set[int] = set()
        self._stages()  # what ran before is no phase's
        # Only differences of its readings are reported: where they count from is no matter.
        self._watch = Stopwatch(time.process_time)
        self._last = self._now()

    def _now(self) -> Snapshot:
        with open(f"/proc/{self._jvm_pid}/stat") as stat:
            # Fields 14 and 15 (utime, stime), after the command name in parentheses.
            parts = stat.read().rsplit(")", 1)[1].split()
        jvm = (int(parts[11]) + int(parts[12])) / _TICKS
        watch = self._watch
        return Snapshot(watch.elapsed(), watch.cpu_elapsed(), jvm, 0.0, 0.0, 0.0, 0, 0)

    def _stages(self) -> Snapshot:
        """The task time, GC, shuffle and tasks of the stages since the last mark (all of
        them complete then: a phase ends with an action's result)."""
        task = gc = shuffle = 0.0
        tasks = 0
        newest = self._seen_stage
        for stage in _stages_of(self._spark):
            if stage.stageId() <= self._seen_stage:
                continue
            newest = max(newest, stage.stageId())
            task += stage.executorRunTime() / 1000
            gc += stage.jvmGcTime() / 1000
            shuffle += stage.shuffleWriteBytes() / 2**20
            tasks += stage.numCompleteTasks()
        self._seen_stage = newest
        jobs = set(self._spark.sparkContext.statusTracker().getJobIdsForGroup(None))
        new_jobs, self._seen_jobs = jobs - self._seen_jobs, jobs
        return Snapshot(0.0, 0.0, 0.0, task, gc, shuffle, tasks, len(new_jobs))

    def mark(self, name: str) -> None:
        """End the phase `name` (the time since the last mark)."""
        now = self._now()
        counted = now - self._last
        stages = self._stages()
        counted.task, counted.gc, counted.shuffle_mb = stages.task, stages.gc, stages.shuffle_mb
        counted.tasks, counted.jobs = stages.tasks, stages.jobs
        self.phases[name] = counted
        self._last = self._now()


def _stages_of(spark: SparkSession) -> Iterator[Any]:
    """Every stage Spark's status store holds (its `StageData`), once the store has caught
    up: it learns of ended tasks through the (asynchronous) listener bus, and a stage read
    before then would be counted late or not at all."""
    sc = spark._jsc.sc()  # type: ignore[union-attr]
    sc.listenerBus().waitUntilEmpty(10_000)
    gateway = spark.sparkContext._gateway  # type: ignore[union-attr]
    no_quantiles = gateway.new_array(gateway.jvm.double, 0)
    stages = sc.statusStore().stageList(None, False, False, no_quantiles, None).iterator()
    while stages.hasNext():
        yield stages.next()


@dataclass(frozen=True)
class StageSpan:
    """One Spark stage on a run's clock: seconds from the run's start to its submission, its
    first task's launch and its completion; its tasks, their summed run time, its shuffle
    bytes and the call site Spark names it by."""

    start: float
    first_task: float
    end: float
    tasks: int
    task_seconds: float
    shuffle_read_mb: float
    shuffle_write_mb: float
    name: str


def stage_timeline(spark: SparkSession, since: float) -> list[StageSpan]:
    """The completed stages submitted at or after `since` (epoch seconds), in order of
    submission: where a run's wall time went stage by stage. The wall time no stage covers
    (`uncovered`) is the driver's own work and Spark's between jobs."""
    spans = []
    for stage in _stages_of(spark):
        submitted, completed = stage.submissionTime(), stage.completionTime()
        if submitted.isEmpty() or completed.isEmpty():
            continue  # skipped (its output reused) or not over
        start = submitted.get().getTime() / 1000 - since
        if start < 0:
            continue
        launched = stage.firstTaskLaunchedTime()
        spans.append(
            StageSpan(
                start=start,
                first_task=launched.get().getTime() / 1000 - since
                if not launched.isEmpty()
                else start,
                end=completed.get().getTime() / 1000 - since,
                tasks=stage.numCompleteTasks(),
                task_seconds=stage.executorRunTime() / 1000,
                shuffle_read_mb=stage.shuffleReadBytes() / 2**20,
                shuffle_write_mb=stage.shuffleWriteBytes() / 2**20,
                name=stage.name(),
            )
        )
    return sorted(spans, key=lambda span: span.start)


def uncovered(spans: list[StageSpan], wall: float) -> float:
    """Seconds of `[0, wall]` during which no stage of `spans` ran."""
    covered, reach = 0.0, 0.0
    for span in spans:
        start, end = max(span.start, reach), min(span.end, wall)
        if end > start:
            covered += end - start
        reach = max(reach, span.end)
    return wall - covered


def timeline_rows(spans: list[StageSpan]) -> list[dict[str, Any]]:
    """The spans as JSON-ready rows (seconds rounded to milliseconds)."""
    return [
        {
            name: round(value, 3) if isinstance(value, float) else value
            for name, value in vars(span).items()
        }
        for span in spans
    ]
