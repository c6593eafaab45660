"""Micro-batches cut into rounds of bins, with deferred adds, commit exactly what the serial
runner computes; a deferred add that overflows is re-planned and rejected as it must be."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine

from ledger_engine import Event, RunResult, run_serial
from ledger_engine.apps.bank.generator import generate_events
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.core.ingest import event_to_line
from ledger_engine.core.records import INT64_MAX
from ledger_engine.pipeline.job import BatchProcessor, files_frame
from ledger_engine.runtime.spark.engine import ExecutionOptions
from ledger_engine.store.lease import run_lease
from tests.support.bank import deposit, fee_transfer
from tests.support.database import rows

LEDGER = build_ledger()


def commit(spark, engine: Engine, batch_id: int, events: list[Event], options) -> Any:
    content = "".join(event_to_line(e) + "\n" for e in events).encode()
    with run_lease(engine, "pytest") as lease:
        processor = BatchProcessor(spark, LEDGER, engine, lease, options)
        return processor.process(batch_id, files_frame(spark, [(f"b{batch_id}.jsonl", content)]))


def assert_stored(engine: Engine, expected: RunResult) -> None:
    for table in ("accounts", "asset_ledger"):
        stored = dict(rows(engine, f"SELECT key, value FROM {table}"))
        assert stored == expected.state[table]
    assert rows(
        engine,
        "SELECT request_id, table_name, key, before #>> '{}', after #>> '{}'"
        " FROM ledger_change_log ORDER BY batch_id, position, seq",
    ) == [
        (
            c.request_id,
            c.table,
            c.key,
            None if c.before is None else str(c.before),
            None if c.after is None else str(c.after),
        )
        for c in expected.changes
    ]
    assert rows(
        engine, "SELECT request_id, payload FROM ledger_results ORDER BY batch_id, position, seq"
    ) == [(r.request_id, r.payload) for r in expected.results]
    assert rows(
        engine, "SELECT request_id, reason FROM ledger_rejections ORDER BY batch_id, position"
    ) == [(r.request_id, r.reason) for r in expected.rejections]


def fee_transfers(count: int, accounts: int) -> list[Event]:
    """`count` fee transfers among `accounts` accounts, each paying 0 to 4 into `acct-fees`."""
    events = []
    for i in range(count):
        source, target = i * 7 % accounts, i * 13 % accounts
        events.append(
            fee_transfer(
                f"f{i}",
                f"acct-{source}",
                f"acct-{target}",
                1 + i % 50,
                fee=i % 5,
                fee_account="acct-fees",
                assets=(f"asset-{source}", f"asset-{target}"),
            )
        )
    return events


def deposits(accounts: int, amount: int = 10_000) -> list[Event]:
    return [
        deposit(f"d{i}", f"acct-{i}", amount, asset=f"asset-{i}", asset_amount=100)
        for i in range(accounts)
    ]


@pytest.mark.parametrize("options", [ExecutionOptions(bins=2, rounds=3), ExecutionOptions(bins=3)])
def test_batches_in_rounds_with_a_hot_fee_account_equal_the_serial_runner(
    spark, engine: Engine, options
) -> None:
    first = deposits(40)
    second = fee_transfers(600, 40) + generate_events(400, accounts=40, seed=2)[40:]
    assert commit(spark, engine, 0, first, options).committed
    summary = commit(spark, engine, 1, second, options)
    assert summary.rounds == (options.rounds or summary.rounds)
    assert_stored(engine, run_serial(LEDGER, first + second))


def test_a_deferred_add_that_overflows_is_replanned_and_rejected(spark, engine: Engine) -> None:
    opening = [
        *deposits(3),
        deposit("big", "acct-fees", INT64_MAX - 20, asset="asset-fees"),
    ]
    options = ExecutionOptions(bins=2, rounds=2)
    commit(spark, engine, 0, opening, options)
    transfers = fee_transfers(12, 3)  # fees 0..4: the fee account overflows after 20
    summary = commit(spark, engine, 1, transfers, options)
    assert summary.replans == 1
    expected = run_serial(LEDGER, opening + transfers)
    assert "overflow" in [r.reason for r in expected.rejections]
    assert_stored(engine, expected)
