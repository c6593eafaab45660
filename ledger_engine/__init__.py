"""Serializable streaming ledger: declare tables and streams, run events with ACID semantics."""

from ledger_engine.api import AccessType, DeclarationError, StreamingLedger, Table
from ledger_engine.model import Change, Duplicate, Event, Rejection, Result, RunResult
from ledger_engine.serial import run_serial
from ledger_engine.transaction import Context, StateAccess


def run_spark(spark, ledger, events, state=None, known_requests=None, options=None):
    """Run `events` in parallel on Spark; the result equals `run_serial`'s (see
    `ledger_engine.spark.runner`). `options` is a `ledger_engine.spark.batch.ExecutionOptions`."""
    from ledger_engine.spark.runner import run_spark as _run_spark

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
