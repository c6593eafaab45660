"""A batch that cannot be spread over bins is recognised from its first events, and
`run_spark` runs it with the serial runner instead of paying Spark's costs for nothing."""

from __future__ import annotations

import numpy as np

from ledger_engine import run_serial, run_spark
from ledger_engine.apps.bank.generator import account_id, asset_id
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.core.records import Event
from ledger_engine.runtime.parallel.probe import MIN_SPREAD, PROBE_EVENTS, probe
from ledger_engine.runtime.spark.batch import ExecutionOptions
from tests.support.bank import transfer

LEDGER = build_ledger()
ROUND_COST = ExecutionOptions().round_cost


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


def uniform(count: int, accounts: int, seed: int = 0) -> list[Event]:
    rng = np.random.default_rng(seed)
    return transfers(rng.integers(0, accounts, count), rng.integers(0, accounts, count))


def to_one_hot_account(count: int, accounts: int, seed: int = 0) -> list[Event]:
    rng = np.random.default_rng(seed)
    return transfers(rng.integers(1, accounts, count), np.zeros(count, dtype=np.int64))


def opening(accounts: int) -> dict[str, dict[str, int]]:
    return {
        "accounts": {account_id(i): 1_000 for i in range(accounts)},
        "asset_ledger": {asset_id(i): 100 for i in range(accounts)},
    }


def test_a_batch_that_reads_and_writes_one_hot_account_cannot_be_spread() -> None:
    prospect = probe(LEDGER, to_one_hot_account(3_000, 10_000), 2, ROUND_COST, {})
    assert prospect.probed == 3_000
    assert prospect.spread == 1.0
    assert not prospect.spreads


def test_a_batch_dense_over_few_accounts_cannot_be_spread() -> None:
    prospect = probe(LEDGER, uniform(20_000, 200), 2, ROUND_COST, {})
    assert prospect.probed == PROBE_EVENTS  # only the first events are planned
    assert prospect.spread < MIN_SPREAD
    assert not prospect.spreads


def test_uniform_transfers_over_many_accounts_spread_over_both_bins() -> None:
    prospect = probe(LEDGER, uniform(4_000, 100_000), 2, ROUND_COST, {})
    assert prospect.spread > 1.9
    assert prospect.spreads


def test_a_batch_larger_than_half_its_accounts_spreads_when_rounds_can_cut_it() -> None:
    # 100,000 transfers over 40,000 accounts form one giant component, but rounds of a few
    # thousand transfers do not; the probe plans its prefix as the batch would be planned.
    prospect = probe(LEDGER, uniform(100_000, 40_000), 2, ROUND_COST, {})
    assert prospect.spreads


def test_the_probe_asks_about_the_batch_not_the_cores() -> None:
    events = uniform(4_000, 100_000)
    assert probe(LEDGER, events, 1, ROUND_COST, {}) == probe(LEDGER, events, 2, ROUND_COST, {})


def test_known_requests_are_not_probed() -> None:
    events = to_one_hot_account(1_000, 5_000)
    known = {event.request_id: event.fingerprint() for event in events}
    prospect = probe(LEDGER, events, 2, ROUND_COST, known)
    assert prospect.probed == 0
    assert prospect.spreads  # nothing learnt: the parallel runner decides


def _latest_job(spark) -> int:
    return max(spark.sparkContext.statusTracker().getJobIdsForGroup(), default=-1)


def test_run_spark_runs_an_unspreadable_batch_serially_without_a_spark_job(spark) -> None:
    events = to_one_hot_account(2_000, 300)
    state = opening(300)
    before = _latest_job(spark)
    assert run_spark(spark, LEDGER, events, state) == run_serial(LEDGER, events, state)
    assert _latest_job(spark) == before


def test_run_spark_runs_a_spreadable_batch_on_spark(spark) -> None:
    events = uniform(2_000, 100_000)
    state = opening(100_000)
    before = _latest_job(spark)
    assert run_spark(spark, LEDGER, events, state) == run_serial(LEDGER, events, state)
    assert _latest_job(spark) > before
