"""The parallel algorithm, run in one process, gives exactly the serial runner's result.

`run_partitioned` admits, plans, executes bins round by round and settles deferred adds the way
the Spark runner does; checking it here on many generated ledgers and workloads, with several
bin counts and round costs (which decide how a batch is cut into rounds), proves the algorithm;
`test_spark_runner.py` then proves the Spark plumbing on fewer, slower examples.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger_engine import Event, run_serial
from ledger_engine.apps.bank import ledger as bank_app
from ledger_engine.apps.bank.generator import generate_events
from ledger_engine.core.records import INT64_MAX
from ledger_engine.runtime.parallel.in_process import run_partitioned
from tests.support.generated_apps import Workload, build_ledger, known_after, workloads

MANY = settings(max_examples=300, deadline=None)
BINS = st.sampled_from([1, 2, 3, 4])
ROUND_COSTS = st.sampled_from([0, 1, 4, 10**9])
ROUNDS = st.sampled_from([None, None, 2, 3, 7])


@MANY
@given(workloads(), BINS, ROUND_COSTS, ROUNDS)
def test_a_generated_workload_gives_the_serial_result(workload: Workload, bins, round_cost, rounds):
    ledger = build_ledger(workload.app)
    serial = run_serial(ledger, workload.events, workload.state)
    parallel = run_partitioned(
        ledger, workload.events, workload.state, bins=bins, round_cost=round_cost, rounds=rounds
    )
    assert parallel == serial


@settings(max_examples=150, deadline=None)
@given(workloads(), BINS, ROUND_COSTS, st.data())
def test_a_workload_split_into_two_batches_gives_the_serial_result(
    workload: Workload, bins, round_cost, data
):
    ledger = build_ledger(workload.app)
    cut = data.draw(st.integers(0, len(workload.events)), label="cut")
    first_events, second_events = workload.events[:cut], workload.events[cut:]
    whole = run_serial(ledger, workload.events, workload.state)
    options = {"bins": bins, "round_cost": round_cost}
    first = run_partitioned(ledger, first_events, workload.state, **options)
    second = run_partitioned(
        ledger, second_events, first.state, known_after(first_events), **options
    )
    assert second.state == whole.state
    assert first.results + second.results == whole.results
    assert first.rejections + second.rejections == whole.rejections
    assert first.duplicates + second.duplicates == whole.duplicates
    assert first.changes + second.changes == whole.changes


@pytest.mark.parametrize("bins", [1, 2, 4])
@pytest.mark.parametrize("round_cost", [0, 50, 10**9])
def test_a_bank_workload_gives_the_serial_result(bins, round_cost):
    ledger = bank_app.build_ledger()
    events = generate_events(3_000, accounts=80, seed=5, bad_fraction=0.03, duplicate_fraction=0.03)
    assert run_partitioned(ledger, events, bins=bins, round_cost=round_cost) == run_serial(
        ledger, events
    )


def fee_ledger():
    """Transfers that also credit one fee account: the fee row is only ever added to."""
    from ledger_engine import AccessType, StreamingLedger

    ledger = StreamingLedger.create("fees")
    accounts = ledger.declare_state("accounts")

    def pay(event, ctx, source, target, fee):
        balance = source.read_or(0)
        if balance < event["amount"] + event["fee"]:
            ctx.abort("insufficient funds")
        source.write(balance - event["amount"] - event["fee"])
        target.write(target.read_or(0) + event["amount"])
        fee.add(event["fee"])

    (
        ledger.using_stream("pay")
        .apply(pay)
        .on(accounts, lambda e: e["from"], "source", AccessType.READ_WRITE)
        .on(accounts, lambda e: e["to"], "target", AccessType.READ_WRITE)
        .on(accounts, lambda e: "fees", "fee", AccessType.ADD)
    )

    def tip_then_abort(event, ctx, fee):
        """Adds to the fee row, then aborts: the serial runner sees an overflow first if the
        add leaves the int64 range."""
        fee.add(event["tip"])
        ctx.abort("changed my mind")

    ledger.using_stream("tips").apply(tip_then_abort).on(
        accounts, lambda e: "fees", "fee", AccessType.ADD
    )
    return ledger


def test_a_hot_fee_row_is_deferred_and_settled_in_batch_order():
    ledger = fee_ledger()
    events = [
        Event(
            "pay",
            f"p{i}",
            {"from": f"a{i % 7}", "to": f"a{(i * 3) % 7}", "amount": 5, "fee": 1 + i % 3},
        )
        for i in range(200)
    ]
    state = {"accounts": {f"a{i}": 300 for i in range(7)} | {"fees": 10}}
    serial = run_serial(ledger, events, state)
    assert run_partitioned(ledger, events, state, bins=3, round_cost=0) == serial
    fee_changes = [c for c in serial.changes if c.key == "fees"]
    assert fee_changes[0].before == 10
    assert all(a.after == b.before for a, b in itertools.pairwise(fee_changes))


def test_a_deferred_add_that_overflows_is_rejected_as_the_serial_runner_does():
    ledger = fee_ledger()
    state = {"accounts": {"a": 100, "b": 100, "fees": INT64_MAX - 5}}
    events = [
        Event("pay", "p1", {"from": "a", "to": "b", "amount": 1, "fee": 3}),
        Event("pay", "p2", {"from": "b", "to": "a", "amount": 1, "fee": 3}),  # fees overflow
        Event("pay", "p3", {"from": "a", "to": "c", "amount": 1, "fee": 2}),
    ]
    serial = run_serial(ledger, events, state)
    assert [r.reason for r in serial.rejections] == ["overflow"]
    assert run_partitioned(ledger, events, state, bins=2, round_cost=0) == serial


def test_a_deferred_add_that_overflows_before_an_abort_is_rejected_as_an_overflow():
    ledger = fee_ledger()
    state = {"accounts": {"a": 100, "b": 100, "fees": INT64_MAX - 5}}
    events = [
        Event("tips", "t1", {"tip": 3}),  # fits, then aborts: aborted
        Event("pay", "p1", {"from": "a", "to": "b", "amount": 1, "fee": 4}),
        Event("tips", "t2", {"tip": 3}),  # would overflow before its abort: overflow
        Event("pay", "p2", {"from": "b", "to": "a", "amount": 1, "fee": 1}),
    ]
    serial = run_serial(ledger, events, state)
    assert [(r.request_id, r.reason) for r in serial.rejections] == [
        ("t1", "aborted"),
        ("t2", "overflow"),
    ]
    assert run_partitioned(ledger, events, state, bins=2, round_cost=0) == serial
