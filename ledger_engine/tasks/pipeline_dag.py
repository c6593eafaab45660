"""The body of the pipeline DAG's micro-batch task (`dags/ledger_pipeline.py`): the DAG file
holds the flow and a line per task, the work is here."""

from __future__ import annotations

import logging
from typing import Any

from ledger_engine.config import Settings
from ledger_engine.pipeline.job import BatchSummary, PipelineReport, run_pipeline
from ledger_engine.store.lease import Holder


def micro_batches_task(run_id: str, dag_id: str, log: logging.Logger) -> dict[str, Any]:
    """Process every landed event file (each micro-batch commits exactly once) under a run
    lease naming the DAG run; return the run's summary, for XCom and the report task."""
    settings = Settings.from_env()
    log.info("inbox %s, Spark master %s", settings.inbox, settings.spark_master)

    def on_wait(current: Holder | None, waited: float) -> None:
        log.info("waited %.0f s for %s", waited, current.describe() if current else "a run")

    # Named in the run lease, so that a `ledger run` started meanwhile says who holds it.
    def on_batch(summary: BatchSummary) -> None:
        log.info("%s", summary.describe())

    report = run_pipeline(
        settings, holder=f"airflow {dag_id} {run_id}", on_wait=on_wait, on_batch=on_batch
    )
    summary = run_summary(report)
    log.info("micro-batches: %s", summary)
    return summary


def run_summary(report: PipelineReport) -> dict[str, Any]:
    """What a pipeline run did, as plain numbers; `first_batch` and `last_batch` are the ids
    of the batches it committed (consecutive; None when it committed none), which the audit
    page of the run names."""
    committed = [b.batch_id for b in report.batches if b.committed]
    return {
        "batches": len(committed),
        "first_batch": min(committed, default=None),
        "last_batch": max(committed, default=None),
        "replayed_batches": sum(1 for b in report.batches if not b.committed),
        "ingested": report.total("ingested"),
        "applied": report.total("applied"),
        "rejected": report.total("rejected"),
        "duplicates": report.total("duplicates"),
        "wall_seconds": round(report.wall_seconds, 3),
        "spark_session_seconds": round(report.session_seconds, 3),
    }
