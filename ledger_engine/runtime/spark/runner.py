"""`run_spark`: the ledger executed in parallel on Spark, equal to `run_serial`.

Two ways in, one engine (`ledger_engine.runtime.spark.engine`):

- `run_spark` takes events in memory and returns the serial runner's `RunResult` (the record
  view): for small runs, and for holding every runner to the serial one. Its events are
  pickled in chunks on the driver and its result built there, both per event: a run of
  millions of events belongs to the other way.
- `run_spark_columnar` takes events already outside the driver (files of JSON lines, or a
  DataFrame of them) and returns a `ColumnarRunResult` of Arrow tables: the driver never
  holds an event.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.core.records import Event, RunResult
from ledger_engine.runtime import Runner
from ledger_engine.runtime.columnar.admission import known_in_memory
from ledger_engine.runtime.columnar.result import ColumnarRunResult
from ledger_engine.runtime.serial import initial_state
from ledger_engine.runtime.spark.engine import (
    EngineProfile,
    EventChunks,
    EventFiles,
    EventFrame,
    ExecutionOptions,
    run_columnar,
)


def run_spark(
    spark: SparkSession,
    ledger: StreamingLedger,
    events: Iterable[Event],
    state: Mapping[str, Mapping[Any, Any]] | None = None,
    known_requests: Mapping[str, str] | None = None,
    options: ExecutionOptions | None = None,
) -> RunResult:
    """Execute `events` in parallel on Spark; the result equals `run_serial`'s on the same
    input."""
    return run_spark_profiled(spark, ledger, events, state, known_requests, options)[0]


def run_spark_profiled(
    spark: SparkSession,
    ledger: StreamingLedger,
    events: Iterable[Event],
    state: Mapping[str, Mapping[Any, Any]] | None = None,
    known_requests: Mapping[str, str] | None = None,
    options: ExecutionOptions | None = None,
) -> tuple[RunResult, EngineProfile]:
    """`run_spark`, and where its time went."""
    ledger.check()
    batch = list(events)
    start = initial_state(ledger, state)
    known = known_in_memory(known_requests or {})
    result, profile = run_columnar(spark, ledger, EventChunks(batch), start, known, options)
    return result.to_run_result(ledger, batch, start), profile


def run_spark_columnar(
    spark: SparkSession,
    ledger: StreamingLedger,
    events: Sequence[Path] | DataFrame,
    state: Mapping[str, Mapping[Any, Any]] | None = None,
    known_requests: Mapping[str, str] | None = None,
    options: ExecutionOptions | None = None,
) -> tuple[ColumnarRunResult, EngineProfile]:
    """Execute the events of `events` in parallel on Spark, as columns.

    `events`: files of JSON lines (a batch in the order of their paths, then of their
    non-blank lines), or a DataFrame with a `value` column of lines (in the order of its
    partitions, then of its rows). The result's record view (`to_run_result`) equals
    `run_serial`'s over the same events in that order.
    """
    ledger.check()
    units = EventFrame(events) if isinstance(events, DataFrame) else EventFiles(list(events))
    start = initial_state(ledger, state)
    return run_columnar(spark, ledger, units, start, known_in_memory(known_requests or {}), options)


def spark_runner(spark: SparkSession, options: ExecutionOptions | None = None) -> Runner:
    """`run_spark` on `spark` with `options`, as a `Runner`."""

    def run(
        ledger: StreamingLedger,
        events: Iterable[Event],
        state: Mapping[str, Mapping[Any, Any]] | None = None,
        known_requests: Mapping[str, str] | None = None,
    ) -> RunResult:
        return run_spark(spark, ledger, events, state, known_requests, options)

    return run
