"""`run_spark`: the ledger executed inside a Spark job.

This first version runs the serial algorithm in a single Spark task: the result is identical to
`run_serial` by construction, and the pipeline already runs through Spark end to end. The
parallel scheduler replaces the body of `run_spark` without changing its contract.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pyspark.sql import SparkSession

from ledger_engine.api import StreamingLedger
from ledger_engine.model import Event, RunResult
from ledger_engine.serial import run_serial


def _run_in_task(
    ledger: StreamingLedger,
    events: list[Event],
    state: Mapping[str, Mapping[Any, Any]] | None,
    known_requests: Mapping[str, str] | None,
) -> RunResult:
    return run_serial(ledger, events, state, known_requests)


def run_spark(
    spark: SparkSession,
    ledger: StreamingLedger,
    events: Iterable[Event],
    state: Mapping[str, Mapping[Any, Any]] | None = None,
    known_requests: Mapping[str, str] | None = None,
) -> RunResult:
    """Execute `events` in a Spark task; the result equals `run_serial`'s on the same input."""
    ledger.check()
    batch = list(events)
    state_copy = {name: dict(rows) for name, rows in (state or {}).items()}
    known = dict(known_requests or {})
    results = (
        spark.sparkContext.parallelize([0], 1)
        .map(lambda _: _run_in_task(ledger, batch, state_copy, known))
        .collect()
    )
    assert len(results) == 1, "one task, one result"
    return results[0]
