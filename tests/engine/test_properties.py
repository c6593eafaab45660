"""Properties of the serial runner over small random bank workloads.

Workloads use few accounts so that transactions conflict often; sources may equal targets,
amounts are sometimes faulty, request ids are sometimes reused (a retry with the same payload
or a clash with another one) or missing, and some events name a stream nobody declared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ledger_engine import Event, RunResult, run_serial
from ledger_engine.apps.bank.generator import generate_events
from ledger_engine.apps.bank.ledger import build_ledger
from tests.support.other_process import OtherHashSeed

LEDGER = build_ledger()
PROPERTY = settings(max_examples=75, deadline=None)

State = dict[str, dict[str, int]]


@dataclass(frozen=True)
class Workload:
    state: State
    events: list[Event]


# -- strategies ------------------------------------------------------------------------------

BAD_AMOUNTS = st.sampled_from([0, -1, -250, 2.5, 10.0, True, "15", None])


def weighted(*choices: tuple[int, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """One of the strategies, picked with the given weights (shrinks towards the first)."""
    total = sum(weight for weight, _ in choices)

    def pick(draw: int) -> st.SearchStrategy[Any]:
        for weight, strategy in choices:
            if draw < weight:
                return strategy
            draw -= weight
        raise AssertionError("unreachable")

    return st.integers(0, total - 1).flatmap(pick)


def amounts(largest: int) -> st.SearchStrategy[Any]:
    """Mostly valid amounts up to `largest`, one in twenty faulty."""
    return weighted((19, st.integers(1, largest)), (1, BAD_AMOUNTS))


def payloads(accounts: int) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    # index `accounts` names an account that holds nothing at the start
    account = st.integers(0, accounts)
    deposit = st.builds(
        lambda a, m, x: (
            "deposits",
            {"account_id": f"acct-{a}", "asset_id": f"asset-{a}", "amount": m, "asset_amount": x},
        ),
        account,
        amounts(300),
        amounts(30),
    )
    transfer = st.builds(
        lambda s, t, m, x, floor: (
            "transfers",
            {
                "source_account_id": f"acct-{s}",
                "target_account_id": f"acct-{t}",
                "source_asset_id": f"asset-{s}",
                "target_asset_id": f"asset-{t}",
                "amount": m,
                "asset_amount": x,
                "min_balance": floor,
            },
        ),
        account,
        account,
        amounts(300),
        amounts(30),
        st.sampled_from([0, 0, 0, 100]),
    )
    lookup = st.builds(lambda a: ("balance_lookups", {"account_id": f"acct-{a}"}), account)
    unknown = st.builds(lambda a: ("withdrawals", {"account_id": f"acct-{a}"}), account)
    missing_key = st.just(("transfers", {"source_account_id": "acct-0", "amount": 5}))
    return weighted((70, transfer), (15, deposit), (10, lookup), (3, unknown), (2, missing_key))


@st.composite
def workloads(draw: st.DrawFn, max_events: int = 40) -> Workload:
    accounts = draw(st.integers(1, 4))
    balances = draw(st.lists(st.integers(0, 1_000), min_size=accounts, max_size=accounts))
    assets = draw(st.lists(st.integers(0, 100), min_size=accounts, max_size=accounts))
    state = {
        "accounts": {f"acct-{i}": b for i, b in enumerate(balances) if b},
        "asset_ledger": {f"asset-{i}": a for i, a in enumerate(assets) if a},
    }
    count = draw(st.integers(0, max_events))
    specs = draw(st.lists(payloads(accounts), min_size=count, max_size=count))
    events: list[Event] = []
    for index, (stream, payload) in enumerate(specs):
        how = draw(
            weighted(
                (90, st.just("fresh")),
                (5, st.just("retry")),
                (3, st.just("clash")),
                (2, st.just("no_id")),
            )
        )
        if how in ("retry", "clash") and events:
            earlier = events[draw(st.integers(0, len(events) - 1))]
            if how == "retry":
                events.append(earlier)
            else:
                events.append(Event(stream, earlier.request_id, payload))
        elif how == "no_id":
            events.append(Event(stream, None, payload))
        else:
            events.append(Event(stream, f"r{index}", payload))
    return Workload(state, events)


# -- helpers ---------------------------------------------------------------------------------


def has_usable_id(event: Event) -> bool:
    return isinstance(event.request_id, str) and event.request_id != ""


def known_requests(events: list[Event]) -> dict[str, str]:
    """What a committed run remembers: each request id with the fingerprint of its first event."""
    known: dict[str, str] = {}
    for event in events:
        if has_usable_id(event):
            known.setdefault(event.request_id, event.fingerprint())
    return known


def applied_deposit_totals(events: list[Event], result: RunResult) -> tuple[int, int]:
    applied = [events[o.position] for o in result.outcomes if o.status == "applied"]
    deposits = [e for e in applied if e.stream == "deposits"]
    return (
        sum(e.payload["amount"] for e in deposits),
        sum(e.payload["asset_amount"] for e in deposits),
    )


# -- properties ------------------------------------------------------------------------------


@PROPERTY
@given(workloads())
def test_money_and_assets_are_conserved(workload: Workload):
    result = run_serial(LEDGER, workload.events, workload.state)
    money, assets = applied_deposit_totals(workload.events, result)
    assert (
        sum(result.state["accounts"].values()) == sum(workload.state["accounts"].values()) + money
    )
    assert sum(result.state["asset_ledger"].values()) == (
        sum(workload.state["asset_ledger"].values()) + assets
    )


@PROPERTY
@given(workloads())
def test_no_balance_or_asset_goes_negative(workload: Workload):
    result = run_serial(LEDGER, workload.events, workload.state)
    assert all(balance >= 0 for balance in result.state["accounts"].values())
    assert all(amount >= 0 for amount in result.state["asset_ledger"].values())


@PROPERTY
@given(workloads())
def test_every_event_has_exactly_one_outcome(workload: Workload):
    result = run_serial(LEDGER, workload.events, workload.state)
    statuses = [o.status for o in result.outcomes]
    assert [o.position for o in result.outcomes] == list(range(len(workload.events)))
    assert statuses.count("applied") + statuses.count("rejected") + statuses.count(
        "duplicate"
    ) == len(workload.events)
    assert statuses.count("rejected") == len(result.rejections)
    assert statuses.count("duplicate") == len(result.duplicates)


@PROPERTY
@given(workloads())
def test_an_event_is_a_duplicate_exactly_when_its_request_id_came_before(workload: Workload):
    result = run_serial(LEDGER, workload.events, workload.state)
    seen: set[str] = set()
    expected = []
    for event in workload.events:
        expected.append(has_usable_id(event) and event.request_id in seen)
        if has_usable_id(event):
            seen.add(event.request_id)
    assert [o.status == "duplicate" for o in result.outcomes] == expected


@PROPERTY
@given(workloads())
def test_replaying_a_workload_gives_an_equal_result(
    other_process: OtherHashSeed, workload: Workload
):
    """Here, and in a process whose hash seed is another (where an order of a set of text
    would change)."""
    first = run_serial(LEDGER, workload.events, workload.state)
    assert run_serial(LEDGER, workload.events, workload.state) == first
    assert other_process.call(run_serial, LEDGER, workload.events, workload.state) == first


@PROPERTY
@given(workloads(), st.data())
def test_a_workload_split_into_two_runs_equals_one_run(workload: Workload, data: st.DataObject):
    split = data.draw(st.integers(0, len(workload.events)), label="split")
    first_events, second_events = workload.events[:split], workload.events[split:]
    whole = run_serial(LEDGER, workload.events, workload.state)
    first = run_serial(LEDGER, first_events, workload.state)
    second = run_serial(LEDGER, second_events, first.state, known_requests(first_events))
    assert second.state == whole.state
    assert first.results + second.results == whole.results
    assert first.rejections + second.rejections == whole.rejections
    assert first.duplicates + second.duplicates == whole.duplicates
    assert first.changes + second.changes == whole.changes
    assert [o.status for o in first.outcomes + second.outcomes] == [
        o.status for o in whole.outcomes
    ]


@settings(max_examples=30, deadline=None)
@given(
    count=st.integers(0, 300),
    accounts=st.integers(1, 5),
    seed=st.integers(0, 2**32),
    split=st.floats(0, 1),
)
def test_generated_workloads_conserve_money_and_split_cleanly(count, accounts, seed, split):
    events = generate_events(
        count, accounts=accounts, seed=seed, bad_fraction=0.05, duplicate_fraction=0.05
    )
    whole = run_serial(LEDGER, events)
    money, assets = applied_deposit_totals(events, whole)
    assert sum(whole.state["accounts"].values()) == money
    assert sum(whole.state["asset_ledger"].values()) == assets

    cut = int(split * count)
    first = run_serial(LEDGER, events[:cut])
    second = run_serial(LEDGER, events[cut:], first.state, known_requests(events[:cut]))
    assert second.state == whole.state
    assert first.results + second.results == whole.results
    assert first.rejections + second.rejections == whole.rejections
    assert first.duplicates + second.duplicates == whole.duplicates
