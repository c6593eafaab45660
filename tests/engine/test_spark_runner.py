"""`run_spark` gives a `RunResult` identical to `run_serial` on the same input."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger_engine import Event, run_serial, run_spark
from ledger_engine.apps.bank import build_ledger
from ledger_engine.apps.bank_events import generate_events

LEDGER = build_ledger()


def test_a_generated_bank_workload_gives_the_serial_result(spark) -> None:
    events = generate_events(2_000, accounts=60, seed=21, bad_fraction=0.05)
    assert run_spark(spark, LEDGER, events) == run_serial(LEDGER, events)


def test_initial_state_and_known_requests_are_honoured(spark) -> None:
    events = generate_events(500, accounts=30, seed=4)
    state = {"accounts": {"acct-000001": 10_000}, "asset_ledger": {"asset-000001": 50}}
    known = {events[5].request_id: events[5].fingerprint(), "gone": "0" * 64}
    assert run_spark(spark, LEDGER, events, state, known) == run_serial(
        LEDGER, events, state, known
    )


accounts = st.sampled_from(["a", "b", "c"])
amounts = st.one_of(st.integers(min_value=-5, max_value=200), st.floats(0, 10), st.none())
bank_events = st.one_of(
    st.builds(
        lambda rid, acct, amount: Event(
            "deposits",
            rid,
            {"account_id": acct, "asset_id": acct, "amount": amount, "asset_amount": 1},
        ),
        st.sampled_from(["r1", "r2", "r3", "r4", "r5", "r6"]),
        accounts,
        amounts,
    ),
    st.builds(
        lambda rid, src, dst, amount: Event(
            "transfers",
            rid,
            {
                "source_account_id": src,
                "target_account_id": dst,
                "source_asset_id": src,
                "target_asset_id": dst,
                "amount": amount,
                "asset_amount": 1,
            },
        ),
        st.sampled_from(["r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8"]),
        accounts,
        accounts,
        amounts,
    ),
    st.builds(
        lambda rid, acct: Event("balance_lookups", rid, {"account_id": acct}),
        st.text(max_size=3),
        accounts,
    ),
)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(bank_events, max_size=25))
def test_generated_event_sequences_give_the_serial_result(spark, events) -> None:
    assert run_spark(spark, LEDGER, events) == run_serial(LEDGER, events)
