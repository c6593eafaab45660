"""Every runner is a `Runner` (`ledger_engine.runtime`): called the same way, each gives the
serial runner's `RunResult`, on the bank and on a user's own ledger."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger_engine.apps import load_ledger
from ledger_engine.apps.bank.generator import generate_events
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.runtime import Runner
from ledger_engine.runtime.parallel.in_process import partitioned_runner
from ledger_engine.runtime.serial import run_serial
from ledger_engine.runtime.spark.engine import ExecutionOptions
from ledger_engine.runtime.spark.runner import spark_runner

SIMPLE_TRADE = Path(__file__).parents[1] / "support" / "apps" / "simple_trade.py"


@pytest.fixture(scope="module")
def runners(spark) -> dict[str, Runner]:
    return {
        "serial": run_serial,
        "in process, 3 bins": partitioned_runner(bins=3),
        # Chunks of 16 events: each slot executes its events over several chunks.
        "spark, 2 bins, chunks of 16": spark_runner(spark, ExecutionOptions(bins=2, chunk=16)),
    }


def test_every_runner_gives_the_serial_result_on_the_bank(runners):
    ledger = build_ledger()
    events = generate_events(800, accounts=40, seed=8, bad_fraction=0.05)
    first, rest = events[:300], events[300:]
    before = run_serial(ledger, first)
    known: dict[str, str] = {}  # each request id's first event, as a committed run leaves it
    for event in first:
        if isinstance(event.request_id, str) and event.request_id:
            known.setdefault(event.request_id, event.fingerprint())
    expected = run_serial(ledger, rest, before.state, known)
    for name, runner in runners.items():
        assert runner(ledger, rest, before.state, known) == expected, name


def test_every_runner_gives_the_serial_result_on_a_users_ledger(runners):
    ledger = load_ledger(f"{SIMPLE_TRADE}:build_ledger")
    from simple_trade import sample_events

    events = sample_events(500, accounts=15, seed=3)
    expected = run_serial(ledger, events)
    for name, runner in runners.items():
        assert runner(ledger, events) == expected, name
