"""A batch with no parallelism in it runs in one task, decided from the plan's arrays; a
batch that spreads runs in as many tasks as there are bins. Either way the result is the
serial runner's."""

from __future__ import annotations

import numpy as np

from ledger_engine import run_serial
from ledger_engine.apps.bank.generator import account_id, asset_id
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.core.records import Event
from ledger_engine.runtime.spark.engine import ExecutionOptions
from ledger_engine.runtime.spark.runner import run_spark_profiled
from tests.support.bank import transfer

LEDGER = build_ledger()
TWO_BINS = ExecutionOptions(bins=2)


def transfers(sources: np.ndarray, targets: np.ndarray) -> list[Event]:
    return [
        transfer(
            f"t-{i}",
            account_id(int(s)),
            account_id(int(t)),
            5,
            assets=(asset_id(int(s)), asset_id(int(t))),
        )
        for i, (s, t) in enumerate(zip(sources, targets, strict=True))
    ]


def opening(accounts: int) -> dict[str, dict[str, int]]:
    return {
        "accounts": {account_id(i): 1_000 for i in range(accounts)},
        "asset_ledger": {asset_id(i): 100 for i in range(accounts)},
    }


def test_a_batch_that_reads_and_writes_one_hot_account_runs_in_one_task(spark) -> None:
    rng = np.random.default_rng(0)
    events = transfers(rng.integers(1, 300, 2_000), np.zeros(2_000, dtype=np.int64))
    result, profile = run_spark_profiled(spark, LEDGER, events, opening(300), options=TWO_BINS)
    assert result == run_serial(LEDGER, events, opening(300))
    assert (profile.rounds, profile.slots) == (1, 1)
    assert profile.tasks["round 0"]["items"] == 2_000


def test_a_batch_dense_over_few_accounts_runs_in_one_task(spark) -> None:
    rng = np.random.default_rng(1)
    events = transfers(rng.integers(0, 50, 1_500), rng.integers(0, 50, 1_500))
    result, profile = run_spark_profiled(spark, LEDGER, events, opening(50), options=TWO_BINS)
    assert result == run_serial(LEDGER, events, opening(50))
    assert profile.slots == 1


def test_uniform_transfers_over_many_accounts_spread_over_both_bins(spark) -> None:
    rng = np.random.default_rng(2)
    events = transfers(rng.integers(0, 100_000, 2_000), rng.integers(0, 100_000, 2_000))
    state = opening(100_000)
    result, profile = run_spark_profiled(spark, LEDGER, events, state, options=TWO_BINS)
    assert result == run_serial(LEDGER, events, state)
    assert (profile.rounds, profile.slots) == (1, 2)
