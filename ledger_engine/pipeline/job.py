"""The micro-batch pipeline: landed files -> screened events -> parallel execution on Spark ->
the tasks' journal, committed exactly once by the driver.

`BatchProcessor.process` is one micro-batch; `run_pipeline` drives the Structured Streaming job
over everything that has landed in the inbox and returns a summary per batch. The driver
handles file names and line counts, the compact schedule, and the tasks' reports (their
journal as CSV, which the commit writes into the ledger tables unread, and Merkle bucket
deltas); events, rows and outcomes stay in Spark tasks and PostgreSQL.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg2
from pyspark.sql import DataFrame, SparkSession
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from ledger_engine.apps import load_ledger
from ledger_engine.config import Settings
from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.core.records import APPLIED, DUPLICATE, REJECTED
from ledger_engine.core.stopwatch import Stopwatch
from ledger_engine.errors import BatchFailed, CommitRefused
from ledger_engine.faults import (
    AFTER_COMMIT,
    AFTER_READ,
    AFTER_STAGING,
    BEFORE_COMMIT,
    DURING_EXECUTION,
    NO_FAULTS,
    FaultSwitch,
)
from ledger_engine.pipeline.checkpoint import stream_checkpoint
from ledger_engine.pipeline.event_inbox import landed_event_files
from ledger_engine.runtime.spark.engine import (
    EngineProfile,
    ExecutionOptions,
    LandedContents,
    journal_batch,
)
from ledger_engine.runtime.spark.files import DESCRIBED_DDL, NAMED_DDL, described, named
from ledger_engine.runtime.spark.session import build_session
from ledger_engine.runtime.spark.streaming import run_available_batches, unfinished_batch
from ledger_engine.store.batch_inputs import committed_files
from ledger_engine.store.batch_reads import CommittedRows, executed_requests
from ledger_engine.store.commit import StagedBatch, commit_staged, committed_input
from ledger_engine.store.database import libpq_url, open_store
from ledger_engine.store.lease import Holder, RunLease, run_lease
from ledger_engine.store.schema import apply_declared_schema


@dataclass(frozen=True)
class BatchSummary:
    """What one micro-batch did; `committed` is False for a replay of a committed batch."""

    batch_id: int
    committed: bool
    files: int
    ingested: int
    applied: int
    rejected: int
    duplicates: int
    execute_seconds: float
    commit_seconds: float
    rounds: int = 0
    replans: int = 0
    # The driver's CPU seconds (the batch's thread) while it executed, before its commit.
    execute_cpu_seconds: float = 0.0
    # Where the time went: driver steps of execution and commit, and the Spark tasks' profile.
    seconds: dict[str, float] = field(default_factory=dict)
    tasks: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        """The batch as one progress line, the same in a task log and in `ledger run`."""
        took = self.execute_seconds + self.commit_seconds
        if not self.committed:
            return f"micro-batch {self.batch_id}: committed before, skipped in {took:.2f} s"
        rate = f", {_rate(self.ingested / took)} events/s" if took > 0 else ""
        return (
            f"micro-batch {self.batch_id}: {_count(self.ingested, 'event')}, {self.applied} "
            f"applied, {self.rejected} rejected, {_count(self.duplicates, 'duplicate')} in "
            f"{took:.2f} s{rate}"
        )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _rate(per_second: float) -> str:
    """A rate to two significant figures at least: a batch of one event in 2.5 s is 0.4
    events/s, not 0."""
    return f"{per_second:.0f}" if per_second >= 100 else f"{per_second:.2g}"


@dataclass
class PipelineReport:
    batches: list[BatchSummary] = field(default_factory=list)
    wall_seconds: float = 0.0
    # Starting the Spark session, part of `wall_seconds` (0 for a session the caller gave,
    # and for a run that found nothing to do).
    session_seconds: float = 0.0
    # The landed event files no committed batch had taken when the run began: with none, the
    # run starts no Spark session.
    pending_files: int = 0

    def total(self, name: str) -> int:
        return sum(getattr(b, name) for b in self.batches if b.committed)


@dataclass(frozen=True)
class FileInfo:
    name: str
    lines: int  # non-blank
    sha256: str


def input_fingerprint(files: list[FileInfo]) -> str:
    """Identifies a batch's input: its file names and contents."""
    digest = hashlib.sha256()
    for info in sorted(files, key=lambda f: f.name):
        digest.update(info.name.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(bytes.fromhex(info.sha256))
    return digest.hexdigest()


def files_frame(spark: SparkSession, files: list[tuple[str, bytes]]) -> DataFrame:
    """Files (name, content) as the streaming source gives a batch: a (path, content) frame."""
    rows = [(name, bytearray(content)) for name, content in files]
    return spark.createDataFrame(rows, "path string, content binary")


class BatchProcessor:
    """Runs micro-batches of one ledger on one Spark session into one system of record,
    under a run's lease (`ledger_engine.store.lease`): every write checks it still holds.

    `faults` is called at every fault point (`ledger_engine.faults`).
    """

    def __init__(
        self,
        spark: SparkSession,
        ledger: StreamingLedger,
        engine: Engine,
        lease: RunLease,
        options: ExecutionOptions | None = None,
        faults: FaultSwitch = NO_FAULTS,
    ) -> None:
        self.spark = spark
        self.ledger = ledger
        self.engine = engine
        self.lease = lease
        self.faults = faults
        self.dsn = libpq_url(engine.url.render_as_string(hide_password=False))
        self.options = options or ExecutionOptions()

    def process(self, batch_id: int, frame: DataFrame) -> BatchSummary:
        """Execute and commit one micro-batch of landed files (`frame`: path, content)."""
        # The CPU of the thread that runs the batch (`engine.run_columnar` says why not the
        # process's).
        watch = Stopwatch(time.thread_time)
        staged, profile = self.stage(batch_id, frame)
        if staged is None:
            return BatchSummary(batch_id, False, 0, 0, 0, 0, 0, watch.elapsed(), 0)
        self.faults.reach(AFTER_STAGING, batch_id)
        executed, executed_cpu = watch.elapsed(), watch.cpu_elapsed()
        self.lease.confirm()
        report = commit_staged(
            self.engine,
            self.ledger,
            staged,
            before_commit=lambda: self.faults.reach(BEFORE_COMMIT, batch_id),
        )
        self.faults.reach(AFTER_COMMIT, batch_id)
        counts = report.counts
        assert profile is not None
        return BatchSummary(
            batch_id=batch_id,
            committed=report.committed,
            files=len(staged.input_files),
            ingested=staged.ingested,
            applied=counts.get(APPLIED, 0),
            rejected=counts.get(REJECTED, 0),
            duplicates=counts.get(DUPLICATE, 0),
            execute_seconds=executed,
            commit_seconds=watch.elapsed() - executed,
            rounds=profile.rounds,
            replans=profile.replans,
            execute_cpu_seconds=executed_cpu,
            seconds={
                **{f"execute: {k}": v for k, v in profile.driver_seconds.items()},
                **{f"commit: {k}": v for k, v in report.seconds.items()},
            },
            tasks=profile.tasks,
        )

    def stage(
        self, batch_id: int, frame: DataFrame
    ) -> tuple[StagedBatch | None, EngineProfile | None]:
        """Run a micro-batch into its journal; `None` if the batch is already committed."""
        watch = Stopwatch()
        self.lease.confirm()
        files = frame.select("path", "content").mapInArrow(named, NAMED_DDL)
        files = files.persist()
        try:
            descriptions = files.mapInArrow(described, DESCRIBED_DDL)
            infos = sorted(
                (FileInfo(r.name, r.lines, r.sha256) for r in descriptions.collect()),
                key=lambda f: f.name,
            )
            fingerprint = input_fingerprint(infos)
            read_seconds = watch.elapsed()
            self.faults.reach(AFTER_READ, batch_id)
            committed = committed_input(self.engine, batch_id)
            if committed is not None:
                if committed != fingerprint:
                    raise CommitRefused(
                        f"batch {batch_id} is already committed with other input files: the "
                        "streaming checkpoint and the database disagree on what it took"
                    )
                return None, None
            dsn = self.dsn
            journal, profile = journal_batch(
                self.spark,
                self.ledger,
                LandedContents(files, [info.name for info in infos]),
                CommittedRows(dsn),
                lambda ids: executed_requests(dsn, ids),
                batch_id,
                self.options,
                after_round=lambda _: self.faults.reach(DURING_EXECUTION, batch_id),
            )
            lines = sum(info.lines for info in infos)
            assert journal.events == lines, f"{journal.events} events read from {lines} lines"
            profile.driver_seconds["read files"] = read_seconds
            return (
                StagedBatch(
                    batch_id=batch_id,
                    ledger=self.ledger.name,
                    input_files=tuple(info.name for info in infos),
                    input_fingerprint=fingerprint,
                    ingested=journal.events,
                    journal=journal.parts,
                    merkle_deltas=journal.digests,
                    execute_seconds=watch.elapsed(),
                    fence_epoch=self.lease.epoch,
                ),
                profile,
            )
        finally:
            files.unpersist()


_LOST_CONNECTION = ("psycopg2.OperationalError", "psycopg2.InterfaceError")


def failure_cause(exc: BaseException) -> str:
    """One line saying why a batch failed, for people; Spark's Java stack traces reduced to
    the Python error inside them."""
    text = f"{type(exc).__name__}: {exc}"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    lost = [line for line in lines if line.startswith(_LOST_CONNECTION)]
    if isinstance(exc, psycopg2.OperationalError | psycopg2.InterfaceError | DBAPIError) or lost:
        detail = lost[0] if lost else lines[0]
        return f"the connection to the system of record was lost ({detail[:300]})"
    fenced = [line for line in lines if "Fenced: " in line]
    if fenced:  # raised in a Spark task: the line is buried in Spark's report
        return fenced[0][fenced[0].index("Fenced: ") :][:500]
    return lines[0][:500] if lines else type(exc).__name__


def run_pipeline(
    settings: Settings,
    *,
    spark: SparkSession | None = None,
    engine: Engine | None = None,
    options: ExecutionOptions | None = None,
    on_batch: Callable[[BatchSummary], None] | None = None,
    faults: FaultSwitch | None = None,
    holder: str = "ledger run",
    on_wait: Callable[[Holder | None, float], None] | None = None,
) -> PipelineReport:
    """Process every event file that has landed in the inbox, one micro-batch at a time, all
    on one Spark session (`spark`, or one started here and stopped at the end).

    The run holds the run lease throughout (waiting up to `settings.run_wait_seconds` for
    another run, then raising `LedgerBusy`); a failing batch raises `BatchFailed`. The
    streaming checkpoint is this ledger's and database's own under `settings.checkpoint`
    (`pipeline.checkpoint`: one that disagrees raises `CheckpointMismatch`). A run that
    finds no landed file that a committed batch has not taken starts no Spark session and
    runs no batch, unless the streaming checkpoint has a batch it planned and never marked
    done (a run died between the commit and the checkpoint), which it runs again (a no-op for
    a committed batch). `faults`: the fault points' switch (default: from `settings.fault`).
    """
    watch = Stopwatch()
    ledger = load_ledger(settings.app)
    if engine is None:
        store = open_store(settings, ledger)  # migrated, the ledger's schema included
    else:
        store = engine
        apply_declared_schema(store, ledger)
    run = _Run(
        settings,
        ledger,
        store,
        faults or FaultSwitch.from_setting(settings.fault),
        options or ExecutionOptions(round_cost=settings.round_cost),
        spark,
    )
    try:
        with run_lease(
            store, holder, wait_seconds=settings.run_wait_seconds, on_wait=on_wait
        ) as lease:
            run.batches(lease, watch, on_batch)
    finally:
        # Close only what this call opened; a caller's session and engine stay theirs.
        if spark is None and run.session is not None:
            run.session.stop()
        if engine is None:
            store.dispose()
    return _finished(run.report, watch)


@dataclass
class _Run:
    """A pipeline run's parts, and what it reports; `session` is the Spark session it runs
    on (the caller's, or one it starts when there is work)."""

    settings: Settings
    ledger: StreamingLedger
    store: Engine
    faults: FaultSwitch
    options: ExecutionOptions
    session: SparkSession | None
    report: PipelineReport = field(default_factory=lambda: PipelineReport())

    def batches(
        self, lease: RunLease, watch: Stopwatch, on_batch: Callable[[BatchSummary], None] | None
    ) -> None:
        """Under the lease: every micro-batch the inbox and the checkpoint hold."""
        settings, report = self.settings, self.report
        # This ledger's and database's own checkpoint, checked against its batches.
        checkpoint = stream_checkpoint(settings.checkpoint, self.store)
        report.pending_files = len(pending_files(settings.inbox, self.store))
        if report.pending_files == 0 and unfinished_batch(checkpoint) is None:
            return
        if self.session is None:
            with watch.timed("session"):
                self.session = build_session(
                    settings.spark_master,
                    driver_host=settings.spark_driver_host,
                    driver_memory=settings.spark_driver_memory,
                )
            report.session_seconds = watch.seconds["session"]
        processor = BatchProcessor(
            self.session, self.ledger, self.store, lease, self.options, self.faults
        )
        failed: list[BatchFailed] = []

        def handle(batch_id: int, frame: DataFrame) -> None:
            try:
                summary = processor.process(batch_id, frame)
            except Exception as exc:
                failed.append(BatchFailed(batch_id, failure_cause(exc)))
                raise
            report.batches.append(summary)
            if on_batch is not None:
                on_batch(summary)

        try:
            run_available_batches(
                self.session, settings.inbox, checkpoint, settings.files_per_batch, handle
            )
        except Exception as exc:
            if failed:  # Spark wraps the batch's error: say what it was
                raise failed[0] from exc
            raise


def _finished(report: PipelineReport, watch: Stopwatch) -> PipelineReport:
    report.wall_seconds = watch.elapsed()
    return report


def pending_files(inbox: Path, engine: Engine) -> list[str]:
    """The event files landed whole in `inbox` that no committed batch took, in name order."""
    landed = [path.name for path in landed_event_files(inbox)]
    taken = committed_files(engine, landed)
    return [name for name in landed if name not in taken]
