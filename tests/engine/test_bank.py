"""The bank application (deposits, transfers, balance lookups) and its sample-event generator."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from ledger_engine import Event, Result, RunResult, run_serial
from ledger_engine.apps.bank.generator import generate_events
from ledger_engine.apps.bank.ledger import build_ledger
from tests.support.bank import adjustment, deposit, fee_transfer, lookup, transfer
from tests.support.other_process import OtherHashSeed

LEDGER = build_ledger()
EMPTY = {"accounts": {}, "asset_ledger": {}}
# The accounts of most tests, and their asset entries.
A, B = "acct-a", "acct-b"
ASSET_A, ASSET_B = "asset-a", "asset-b"
ASSETS_AB = (ASSET_A, ASSET_B)  # a transfer from a to b moves assets between these


def funded(balance: int, asset: int) -> dict[str, dict[str, int]]:
    """State with account `a` holding `balance` and asset entry `a` holding `asset`."""
    return {"accounts": {A: balance}, "asset_ledger": {ASSET_A: asset}}


def applied_positions(result: RunResult) -> list[int]:
    return [o.position for o in result.outcomes if o.status == "applied"]


def applied_deposit_totals(events: list[Event], result: RunResult) -> tuple[int, int]:
    deposits = [events[p] for p in applied_positions(result) if events[p].stream == "deposits"]
    money = sum(e.payload["amount"] for e in deposits)
    assets = sum(e.payload["asset_amount"] for e in deposits)
    return money, assets


# -- deposits --------------------------------------------------------------------------------


def test_a_deposit_credits_the_account_and_the_asset_entry():
    result = run_serial(LEDGER, [deposit("r1", A, 500, asset=ASSET_A, asset_amount=20)])
    assert result.state == {"accounts": {"acct-a": 500}, "asset_ledger": {"asset-a": 20}}


def test_deposits_to_an_existing_account_accumulate():
    result = run_serial(
        LEDGER,
        [
            deposit("r1", A, 500, asset=ASSET_A, asset_amount=20),
            deposit("r2", A, 7, asset=ASSET_A, asset_amount=3),
        ],
        EMPTY,
    )
    assert result.state == {"accounts": {"acct-a": 507}, "asset_ledger": {"asset-a": 23}}


def test_a_deposit_emits_no_result():
    assert run_serial(LEDGER, [deposit("r1", A, 500, asset=ASSET_A, asset_amount=20)]).results == []


# -- transfers -------------------------------------------------------------------------------


def test_an_affordable_transfer_moves_money_and_assets():
    state = {
        "accounts": {"acct-a": 1_000, "acct-b": 10},
        "asset_ledger": {"asset-a": 50, "asset-b": 5},
    }
    result = run_serial(
        LEDGER, [transfer("t1", A, B, 300, assets=ASSETS_AB, asset_amount=20)], state
    )
    assert result.state == {
        "accounts": {"acct-a": 700, "acct-b": 310},
        "asset_ledger": {"asset-a": 30, "asset-b": 25},
    }


def test_a_successful_transfer_reports_the_new_balances():
    result = run_serial(
        LEDGER, [transfer("t1", A, B, 300, assets=ASSETS_AB, asset_amount=20)], funded(1_000, 50)
    )
    assert result.results == [
        Result(
            "transfers",
            "t1",
            {
                "status": "SUCCESS",
                "source_account_id": "acct-a",
                "target_account_id": "acct-b",
                "source_balance": 700,
                "target_balance": 300,
            },
        )
    ]


@pytest.mark.parametrize(
    ("balance", "asset", "amount", "asset_amount", "min_balance", "status"),
    [
        # balance must exceed the amount
        (100, 50, 100, 1, 0, "REJECT"),
        (101, 50, 100, 1, 0, "SUCCESS"),
        # balance must exceed min_balance
        (500, 50, 10, 1, 500, "REJECT"),
        (501, 50, 10, 1, 500, "SUCCESS"),
        # the source asset must exceed the asset amount
        (500, 20, 10, 20, 0, "REJECT"),
        (500, 21, 10, 20, 0, "SUCCESS"),
    ],
    ids=[
        "balance-equals-amount",
        "balance-one-above-amount",
        "balance-equals-min-balance",
        "balance-one-above-min-balance",
        "asset-equals-asset-amount",
        "asset-one-above-asset-amount",
    ],
)
def test_a_transfer_applies_only_when_strictly_affordable(
    balance, asset, amount, asset_amount, min_balance, status
):
    event = transfer(
        "t1", A, B, amount, assets=ASSETS_AB, asset_amount=asset_amount, min_balance=min_balance
    )
    result = run_serial(LEDGER, [event], funded(balance, asset))
    assert result.rejections == []
    assert result.applied_count == 1
    assert [r.payload["status"] for r in result.results] == [status]


def test_a_rejected_transfer_leaves_the_state_unchanged_and_reports_the_balances():
    state = funded(100, 50)
    result = run_serial(
        LEDGER, [transfer("t1", A, B, 100, assets=ASSETS_AB, asset_amount=1)], state
    )
    assert result.state == state
    assert result.changes == []
    assert result.results[0].payload == {
        "status": "REJECT",
        "source_account_id": "acct-a",
        "target_account_id": "acct-b",
        "source_balance": 100,
        "target_balance": 0,
    }


def test_a_transfer_from_an_account_never_credited_is_a_reject():
    result = run_serial(
        LEDGER,
        [transfer("t1", "acct-ghost", A, 1, assets=("asset-ghost", ASSET_A), asset_amount=1)],
        funded(100, 50),
    )
    assert result.results[0].payload["status"] == "REJECT"
    assert result.state == funded(100, 50)


def test_a_transfer_to_oneself_changes_nothing_but_succeeds():
    result = run_serial(
        LEDGER,
        [transfer("t1", A, A, 40, assets=(ASSET_A, ASSET_A), asset_amount=5)],
        funded(100, 50),
    )
    assert result.state == funded(100, 50)
    assert result.results[0].payload["status"] == "SUCCESS"
    assert result.results[0].payload["source_balance"] == 100


def test_a_transfer_can_use_a_min_balance_below_zero():
    event = transfer("t1", A, B, 10, assets=ASSETS_AB, asset_amount=1, min_balance=-5)
    result = run_serial(LEDGER, [event], funded(11, 2))
    assert result.results[0].payload["status"] == "SUCCESS"


@pytest.mark.parametrize("min_balance", [1.5, "0", True, None])
def test_a_transfer_with_a_non_integer_min_balance_is_aborted(min_balance):
    event = transfer("t1", A, B, 10, assets=ASSETS_AB, asset_amount=1, min_balance=min_balance)
    result = run_serial(LEDGER, [event], funded(100, 50))
    assert [r.reason for r in result.rejections] == ["aborted"]
    assert result.state == funded(100, 50)


# -- balance lookups -------------------------------------------------------------------------


def test_a_balance_lookup_emits_the_balance():
    result = run_serial(LEDGER, [lookup("l1", A)], funded(123, 1))
    assert result.results == [
        Result("balance_lookups", "l1", {"account_id": "acct-a", "balance": 123})
    ]


def test_a_balance_lookup_of_an_unknown_account_emits_zero():
    result = run_serial(LEDGER, [lookup("l1", "acct-nobody")], funded(123, 1))
    assert result.results[0].payload == {"account_id": "acct-nobody", "balance": 0}


def test_a_balance_lookup_writes_nothing():
    result = run_serial(LEDGER, [lookup("l1", A), lookup("l2", "acct-nobody")], funded(123, 1))
    assert result.changes == []
    assert result.state == funded(123, 1)


# -- adjustments (what a write-off of a reconciliation break posts) ----------------------------


def test_an_adjustment_changes_the_balance_by_its_signed_amount():
    events = [
        deposit("d1", A, 500),
        adjustment("w1", A, -120, reference="write-off 7"),
        adjustment("w2", B, 30),
    ]
    result = run_serial(LEDGER, events, EMPTY)
    assert result.state["accounts"] == {A: 380, B: 30}
    assert [r.payload for r in result.results] == [
        {"status": "SUCCESS", "account_id": A, "balance": 380},
        {"status": "SUCCESS", "account_id": B, "balance": 30},
    ]


@pytest.mark.parametrize(
    ("amount", "reason"),
    [
        (-501, "below 0"),
        (0, "non-zero integer"),
        (1.5, "non-zero integer"),
        ("10", "non-zero integer"),
    ],
)
def test_an_adjustment_that_would_go_below_zero_or_is_no_integer_is_aborted(amount, reason):
    result = run_serial(LEDGER, [deposit("d1", A, 500), adjustment("w1", A, amount)], EMPTY)
    assert result.state["accounts"] == {A: 500}
    [rejection] = result.rejections
    assert rejection.reason == "aborted" and reason in rejection.detail


def test_an_adjustment_beyond_int64_is_an_overflow():
    result = run_serial(LEDGER, [adjustment("w1", A, 2**63)], EMPTY)
    assert [r.reason for r in result.rejections] == ["overflow"]


# -- amounts ---------------------------------------------------------------------------------

BAD_AMOUNTS = [0, -1, -500, 1.0, 2.5, True, "100", None]


@pytest.mark.parametrize("amount", BAD_AMOUNTS)
def test_a_deposit_with_a_bad_amount_is_aborted(amount):
    result = run_serial(
        LEDGER, [deposit("r1", A, amount, asset=ASSET_A, asset_amount=5)], funded(100, 50)
    )
    assert [r.reason for r in result.rejections] == ["aborted"]
    assert result.state == funded(100, 50)


@pytest.mark.parametrize("asset_amount", BAD_AMOUNTS)
def test_a_deposit_with_a_bad_asset_amount_is_aborted(asset_amount):
    result = run_serial(
        LEDGER, [deposit("r1", A, 5, asset=ASSET_A, asset_amount=asset_amount)], funded(100, 50)
    )
    assert [r.reason for r in result.rejections] == ["aborted"]
    assert result.state == funded(100, 50)


@pytest.mark.parametrize("amount", BAD_AMOUNTS)
def test_a_transfer_with_a_bad_amount_is_aborted(amount):
    result = run_serial(
        LEDGER, [transfer("t1", A, B, amount, assets=ASSETS_AB, asset_amount=1)], funded(100, 50)
    )
    assert [r.reason for r in result.rejections] == ["aborted"]
    assert result.results == []
    assert result.state == funded(100, 50)


@pytest.mark.parametrize("asset_amount", BAD_AMOUNTS)
def test_a_transfer_with_a_bad_asset_amount_is_aborted(asset_amount):
    result = run_serial(
        LEDGER,
        [transfer("t1", A, B, 10, assets=ASSETS_AB, asset_amount=asset_amount)],
        funded(100, 50),
    )
    assert [r.reason for r in result.rejections] == ["aborted"]
    assert result.state == funded(100, 50)


def test_a_transfer_missing_its_target_is_an_invalid_event_naming_the_field():
    event = transfer("t1", A, B, 10, assets=ASSETS_AB, asset_amount=1)
    del event.payload["target_account_id"]
    result = run_serial(LEDGER, [event], funded(100, 50))
    assert [r.reason for r in result.rejections] == ["invalid_event"]
    assert "lacks field 'target_account_id'" in result.rejections[0].detail
    assert result.state == funded(100, 50)


def test_a_transfer_with_a_null_target_is_a_bad_key():
    event = transfer("t1", A, B, 10, assets=ASSETS_AB, asset_amount=1)
    event.payload["target_account_id"] = None
    result = run_serial(LEDGER, [event], funded(100, 50))
    assert [r.reason for r in result.rejections] == ["bad_key"]


def test_a_misspelt_field_is_an_invalid_event_naming_both_fields():
    event = transfer("t1", A, B, 10, assets=ASSETS_AB, asset_amount=1)
    event.payload["min_balanse"] = 50  # meant as min_balance, which is optional
    result = run_serial(LEDGER, [event], funded(100, 50))
    assert [r.reason for r in result.rejections] == ["invalid_event"]
    assert "has unknown field 'min_balanse'" in result.rejections[0].detail
    assert result.state == funded(100, 50)


DETAILS = {"reference": "E2E-2026-0001", "value_date": "2026-11-02", "description": "rent"}


@pytest.mark.parametrize(
    "make",
    [
        lambda details: deposit("d1", A, 10, asset=ASSET_A, **details),
        lambda details: transfer("t1", A, B, 10, assets=ASSETS_AB, **details),
        lambda details: fee_transfer(
            "f1", A, B, 10, fee=1, fee_account=B, assets=ASSETS_AB, **details
        ),
    ],
)
def test_a_movement_may_carry_its_reference_value_date_and_description(make):
    result = run_serial(LEDGER, [make(DETAILS)], funded(100, 50))
    assert result.rejections == [] and result.applied_count == 1
    assert result.state == run_serial(LEDGER, [make({})], funded(100, 50)).state


@pytest.mark.parametrize(
    ("details", "detail"),
    [
        ({"reference": ""}, "reference must be text of 1 to 140 characters"),
        ({"reference": 42}, "reference must be text of 1 to 140 characters"),
        ({"description": "x" * 501}, "description must be text of 1 to 500 characters"),
        ({"value_date": "02.11.2026"}, "value_date must be a date as YYYY-MM-DD"),
        ({"value_date": "2026-02-30"}, "value_date must be a date as YYYY-MM-DD"),
        ({"value_date": 20261102}, "value_date must be a date as YYYY-MM-DD"),
    ],
)
def test_a_malformed_detail_aborts_the_movement(details, detail):
    for event in (
        deposit("d1", A, 10, asset=ASSET_A, **details),
        transfer("t1", A, B, 10, assets=ASSETS_AB, **details),
    ):
        result = run_serial(LEDGER, [event], funded(100, 50))
        assert [r.reason for r in result.rejections] == ["aborted"]
        assert detail in result.rejections[0].detail
        assert result.state == funded(100, 50)


@pytest.mark.parametrize("amount", [2**63, 10**30])
def test_an_amount_beyond_int64_is_an_overflow(amount):
    result = run_serial(
        LEDGER, [transfer("t1", A, B, amount, assets=ASSETS_AB, asset_amount=1)], funded(100, 50)
    )
    assert [r.reason for r in result.rejections] == ["overflow"]
    assert result.results == []


# -- money conservation over generated workloads ---------------------------------------------


@pytest.mark.parametrize(
    ("seed", "accounts", "bad", "duplicates"),
    [(0, 50, 0.0, 0.0), (1, 50, 0.02, 0.02), (2, 8, 0.1, 0.1), (3, 200, 0.05, 0.01)],
)
def test_money_and_assets_are_conserved_over_a_generated_workload(seed, accounts, bad, duplicates):
    events = generate_events(
        3_000, accounts=accounts, seed=seed, bad_fraction=bad, duplicate_fraction=duplicates
    )
    result = run_serial(LEDGER, events)
    money, assets = applied_deposit_totals(events, result)
    assert sum(result.state["accounts"].values()) == money
    assert sum(result.state["asset_ledger"].values()) == assets


def test_no_balance_goes_negative_over_a_generated_workload():
    events = generate_events(3_000, accounts=10, seed=4, bad_fraction=0.05)
    result = run_serial(LEDGER, events)
    assert min(result.state["accounts"].values()) >= 0
    assert min(result.state["asset_ledger"].values()) >= 0


def test_a_generated_workload_has_successful_and_rejected_transfers():
    result = run_serial(LEDGER, generate_events(3_000, accounts=20, seed=6))
    statuses = Counter(r.payload.get("status") for r in result.results if r.stream == "transfers")
    assert statuses["SUCCESS"] > 0
    assert statuses["REJECT"] > 0


# -- the generator ---------------------------------------------------------------------------


def test_the_generator_is_deterministic_for_a_seed(other_process: OtherHashSeed):
    """Here, and in a process whose hash seed is another (where an order of a set of text
    would change)."""
    arguments = {"accounts": 30, "seed": 42, "bad_fraction": 0.05, "duplicate_fraction": 0.05}
    first = generate_events(2_000, **arguments)
    assert generate_events(2_000, **arguments) == first
    assert other_process.call(generate_events, 2_000, **arguments) == first


def test_the_generator_gives_movements_their_references_on_request_and_nothing_else():
    plain = generate_events(2_000, accounts=30, seed=42, bad_fraction=0.05)
    referenced = generate_events(2_000, accounts=30, seed=42, bad_fraction=0.05, references=True)
    carrying = [e for e in referenced if isinstance(e.payload, dict) and "reference" in e.payload]
    assert {e.stream for e in carrying} == {"deposits", "transfers"}
    assert all(e.payload["reference"] == f"E2E-{e.request_id}" for e in carrying)
    assert len(carrying) > 1_500
    without = [
        Event(e.stream, e.request_id, {k: v for k, v in e.payload.items() if k != "reference"})
        if isinstance(e.payload, dict)
        else e
        for e in referenced
    ]
    assert without == plain
    first, second = run_serial(LEDGER, plain), run_serial(LEDGER, referenced)
    assert (first.state, len(first.rejections)) == (second.state, len(second.rejections))


def test_different_seeds_give_different_events():
    assert generate_events(500, accounts=30, seed=1) != generate_events(500, accounts=30, seed=2)


@pytest.mark.parametrize("count", [0, 1, 9, 10, 11, 1_234])
def test_the_generator_produces_exactly_count_events(count):
    assert len(generate_events(count, accounts=10, seed=0)) == count


def test_the_generator_opens_every_account_with_a_deposit_first():
    events = generate_events(100, accounts=12, seed=3)
    opening = events[:12]
    assert [e.stream for e in opening] == ["deposits"] * 12
    assert [e.payload["account_id"] for e in opening] == [f"acct-{i:06d}" for i in range(12)]
    assert [e.payload["asset_id"] for e in opening] == [f"asset-{i:06d}" for i in range(12)]
    assert all(e.payload["amount"] > 0 and e.payload["asset_amount"] > 0 for e in opening)


def test_fewer_events_than_accounts_gives_only_opening_deposits():
    events = generate_events(5, accounts=1_000, seed=3, bad_fraction=0.5, duplicate_fraction=0.5)
    assert [e.stream for e in events] == ["deposits"] * 5
    assert [e.payload["account_id"] for e in events] == [f"acct-{i:06d}" for i in range(5)]
    assert run_serial(LEDGER, events).applied_count == 5


def test_the_generator_mixes_transfers_lookups_and_deposits():
    events = generate_events(10_000, accounts=100, seed=5, bad_fraction=0, duplicate_fraction=0)
    streams = Counter(e.stream for e in events[100:])
    total = sum(streams.values())
    assert 0.77 < streams["transfers"] / total < 0.83
    assert 0.08 < streams["balance_lookups"] / total < 0.12
    assert 0.08 < streams["deposits"] / total < 0.12


def test_the_generator_request_ids_are_unique_without_duplicates():
    events = generate_events(3_000, accounts=50, seed=8, duplicate_fraction=0, bad_fraction=0)
    ids = [e.request_id for e in events]
    assert len(set(ids)) == len(ids)
    assert ids[0] == "req-8-0"


def test_the_generator_faulty_events_are_exactly_the_rejected_ones():
    events = generate_events(5_000, accounts=50, seed=9, bad_fraction=0.03, duplicate_fraction=0)
    result = run_serial(LEDGER, events)
    assert len(result.rejections) == round(0.03 * 5_000)
    assert {r.reason for r in result.rejections} == {"aborted", "bad_key", "invalid_event"}


def test_the_generator_faults_include_bad_amounts_missing_fields_and_unknown_streams():
    events = generate_events(5_000, accounts=50, seed=9, bad_fraction=0.05, duplicate_fraction=0)
    result = run_serial(LEDGER, events)
    details = " | ".join(r.detail for r in result.rejections)
    assert "must be a positive integer, got -" in details
    assert "must be a positive integer, got 0" in details
    assert ".5" in details  # a fractional amount
    assert "lacks field" in details  # a missing field
    assert "unknown stream" in details
    assert "request_id must be a non-empty string" in details


def test_the_generator_retries_reuse_request_ids_with_same_and_different_payloads():
    events = generate_events(5_000, accounts=50, seed=10, bad_fraction=0, duplicate_fraction=0.04)
    result = run_serial(LEDGER, events)
    assert len(result.duplicates) == round(0.04 * 5_000)
    kinds = Counter(d.kind for d in result.duplicates)
    assert kinds["exists"] > kinds["exists_with_different_payload"] > 0


@pytest.mark.parametrize(
    ("kwargs", "refusal"),
    [
        ({"count": -1}, "count must be >= 0, got -1"),
        ({"count": 10, "accounts": 0}, "accounts must be >= 1, got 0"),
        ({"count": 10, "bad_fraction": -0.1}, "bad_fraction must be between 0 and 1, got -0.1"),
        (
            {"count": 10, "duplicate_fraction": 1.5},
            "duplicate_fraction must be between 0 and 1, got 1.5",
        ),
        (
            {"count": 10, "bad_fraction": 0.6, "duplicate_fraction": 0.6},
            "bad_fraction + duplicate_fraction must not exceed 1",
        ),
    ],
)
def test_the_generator_refuses_impossible_arguments(kwargs, refusal):
    with pytest.raises(ValueError, match=f"^{re.escape(refusal)}$"):
        generate_events(**kwargs)


# -- fee transfers ---------------------------------------------------------------------------

FEES = "acct-fees"  # the account the fee transfers pay their fees into


def test_a_fee_transfer_pays_the_fee_into_the_fee_account():
    result = run_serial(
        LEDGER,
        [fee_transfer("t1", A, B, 300, assets=ASSETS_AB, fee=7, fee_account=FEES)],
        funded(1_000, 50),
    )
    assert result.state["accounts"] == {"acct-a": 693, "acct-b": 300, "acct-fees": 7}
    assert result.results[0].payload["status"] == "SUCCESS"


def test_a_fee_transfer_must_afford_amount_and_fee():
    state = funded(1_000, 50)
    result = run_serial(
        LEDGER, [fee_transfer("t1", A, B, 995, assets=ASSETS_AB, fee=5, fee_account=FEES)], state
    )
    assert result.results[0].payload["status"] == "REJECT"
    assert result.state["accounts"] == state["accounts"]


@pytest.mark.parametrize("fee", [-1, 1.5, "3", None])
def test_a_fee_transfer_with_a_bad_fee_is_aborted(fee):
    result = run_serial(
        LEDGER,
        [fee_transfer("t1", A, B, 10, assets=ASSETS_AB, fee=fee, fee_account=FEES)],
        funded(100, 50),
    )
    assert [r.reason for r in result.rejections] == ["aborted"]


def test_fee_transfers_conserve_money():
    pairs = [(i % 5, (i + 2) % 5) for i in range(60)]  # (source, target) of transfer i
    events = [
        fee_transfer(
            f"t{i}",
            f"acct-a{source}",
            f"acct-a{target}",
            10 + i,
            assets=(f"asset-a{source}", f"asset-a{target}"),
            fee=i % 4,
            fee_account=FEES,
        )
        for i, (source, target) in enumerate(pairs)
    ]
    state = {
        "accounts": {f"acct-a{i}": 500 for i in range(5)},
        "asset_ledger": {f"asset-a{i}": 90 for i in range(5)},
    }
    result = run_serial(LEDGER, events, state)
    assert result.applied_count > 30
    assert sum(result.state["accounts"].values()) == 2_500
    assert result.state["accounts"]["acct-fees"] > 0
