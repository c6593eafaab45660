"""The micro-batch pipeline: landed files -> ordered events -> Spark run -> exactly-once commit.

`process_batch` is one micro-batch; `run_pipeline` drives the Structured Streaming job over
everything that has landed in the inbox and returns a summary per batch.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from pyspark.sql import SparkSession
from sqlalchemy import Engine

from ledger_engine.api import StreamingLedger
from ledger_engine.apps import load_ledger
from ledger_engine.batch import (
    APPLIED,
    DUPLICATE,
    REJECTED,
    BatchRecord,
    line_outcomes,
    runnable_events,
    touched_keys,
)
from ledger_engine.config import Settings
from ledger_engine.ingest import ingest_files, input_fingerprint
from ledger_engine.model import RunResult
from ledger_engine.spark.runner import run_spark
from ledger_engine.spark.session import build_session
from ledger_engine.spark.streaming import run_available_batches
from ledger_engine.store.commit import commit_batch
from ledger_engine.store.database import open_store
from ledger_engine.store.state import check_state_tables, known_requests, load_rows


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


@dataclass
class PipelineReport:
    batches: list[BatchSummary] = field(default_factory=list)
    wall_seconds: float = 0.0

    def total(self, name: str) -> int:
        return sum(getattr(b, name) for b in self.batches if b.committed)


Runner = Callable[..., RunResult]


def process_batch(
    run: Runner,
    ledger: StreamingLedger,
    engine: Engine,
    batch_id: int,
    files: list[tuple[str, bytes]],
) -> BatchSummary:
    """Order, execute and commit one micro-batch of landed files.

    `run(ledger, events, state, known_requests)` executes the events: `run_serial`, or
    `run_spark` bound to a session.
    """
    started = time.perf_counter()
    lines = ingest_files(files)
    events = runnable_events(lines)
    with engine.connect() as conn:
        state = load_rows(conn, ledger, touched_keys(ledger, events))
        known = known_requests(conn, (e.request_id for e in events))
    result = run(ledger, events, state, known)
    executed = time.perf_counter()
    record = BatchRecord(
        batch_id=batch_id,
        ledger=ledger.name,
        input_files=tuple(sorted(name for name, _ in files)),
        input_fingerprint=input_fingerprint(files),
        outcomes=line_outcomes(lines, result),
        execute_seconds=executed - started,
    )
    report = commit_batch(engine, ledger, record)
    return BatchSummary(
        batch_id=batch_id,
        committed=report.committed,
        files=len(files),
        ingested=len(record.outcomes),
        applied=record.count(APPLIED),
        rejected=record.count(REJECTED),
        duplicates=record.count(DUPLICATE),
        execute_seconds=executed - started,
        commit_seconds=time.perf_counter() - executed,
    )


def run_pipeline(
    settings: Settings,
    *,
    spark: SparkSession | None = None,
    engine: Engine | None = None,
    on_batch: Callable[[BatchSummary], None] | None = None,
) -> PipelineReport:
    """Process every event file that has landed in the inbox, one micro-batch at a time."""
    started = time.perf_counter()
    ledger = load_ledger(settings.app)
    store = engine or open_store(settings)
    with store.connect() as conn:
        check_state_tables(conn, ledger)
    session = spark or build_session(
        settings.spark_master,
        driver_host=settings.spark_driver_host,
        driver_memory=settings.spark_driver_memory,
    )
    report = PipelineReport()

    def handle(batch_id: int, files: list[tuple[str, bytes]]) -> None:
        summary = process_batch(partial(run_spark, session), ledger, store, batch_id, files)
        report.batches.append(summary)
        if on_batch is not None:
            on_batch(summary)

    try:
        run_available_batches(
            session, settings.inbox, settings.checkpoint, settings.files_per_batch, handle
        )
    finally:
        # Close only what this call opened; a caller's session and engine stay theirs.
        if spark is None:
            session.stop()
        if engine is None:
            store.dispose()
    report.wall_seconds = time.perf_counter() - started
    return report
