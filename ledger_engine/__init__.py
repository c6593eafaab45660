"""Serializable streaming ledger: declare tables and streams, run events with ACID semantics."""

from ledger_engine.core.declarations import AccessType, StreamingLedger, Table
from ledger_engine.core.records import Change, Duplicate, Event, Rejection, Result, RunResult
from ledger_engine.core.transaction import Context, StateAccess
from ledger_engine.errors import DeclarationError
from ledger_engine.runtime.serial import run_serial


def run_spark(spark, ledger, events, state=None, known_requests=None, options=None):
    """Run `events` in parallel on Spark; the result equals `run_serial`'s (see
    `ledger_engine.runtime.spark.runner`). `options` is an `ExecutionOptions` of
    `ledger_engine.runtime.spark.engine`."""
    from ledger_engine.runtime.spark.runner import run_spark as _run_spark

    return _run_spark(spark, ledger, events, state, known_requests, options)


__all__ = [
    "AccessType",
    "Change",
    "Context",
    "DeclarationError",
    "Duplicate",
    "Event",
    "Rejection",
    "Result",
    "RunResult",
    "StateAccess",
    "StreamingLedger",
    "Table",
    "run_serial",
    "run_spark",
]
