"""The runners behind one contract: the serial reference, the parallel algorithm (in process
and on Spark).

Every runner is a `Runner`: a ledger, its events in order, the state before them and the
request ids committed earlier in; the `RunResult` out, equal to `run_serial`'s on the same
input (docs/contract.md, point 1: the serial runner is the reference, every other runner is
checked against it). `runtime.parallel.in_process.partitioned_runner` and
`runtime.spark.runner.spark_runner` make the parallel ones, bound to their options (and Spark
session).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.core.records import Event, RunResult


class Runner(Protocol):
    """Executes a ledger's events with serializable semantics."""

    def __call__(
        self,
        ledger: StreamingLedger,
        events: Iterable[Event],
        state: Mapping[str, Mapping[Any, Any]] | None = None,
        known_requests: Mapping[str, str] | None = None,
    ) -> RunResult: ...
