"""The full re-derivation: the stored event log, re-executed from an empty ledger by the serial
runner, equals everything PostgreSQL holds on what the engine committed; a change behind the
engine's back is found and located by batch, position, table and key.

The committed ledger is the bank workload of tests/support/bank_workload.py (every kind of
outcome; accounts alice 90, bob 80, carol 50, dave 5), committed once; each tampering case
works on a copy. Generated workloads commit through Spark into one database, batch after batch.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, create_engine, text

from ledger_engine.apps.bank.generator import generate_events
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.audit.rederivation.replay import ReplayProgress, replay_checks
from ledger_engine.audit.rederivation.stored_form import ambiguous, jsonb_form, same_json
from ledger_engine.core.records import canonical_json
from ledger_engine.runtime.serial import SerialRun, run_serial
from ledger_engine.store.database import connect
from tests.support.checks import failures

LEDGER = build_ledger()
CHECKS = [
    "event outcomes",
    "event log",
    "rejections",
    "duplicates",
    "executed requests",
    "change log",
    "results",
    "batch counts",
    "table accounts",
    "table asset_ledger",
]


# -- the stored form of values and the chained serial runner, in process -----------------------

# Text PostgreSQL stores: no NUL, no lone surrogates.
stored_text = st.text(
    st.characters(exclude_characters="\x00", exclude_categories=("Cs",)), max_size=4
)
finite_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([1e16, -1e16, 1.5e16, 1e300, 5e-324, -0.0, 0.1, 123.0])
    | stored_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(stored_text, inner, max_size=3),
    max_leaves=6,
)


@pytest.fixture(scope="module")
def server(pg_server_url: str) -> Iterator[Engine]:
    engine = create_engine(pg_server_url)
    yield engine
    engine.dispose()


@settings(max_examples=200, deadline=None)
@given(value=finite_json)
def test_jsonb_form_is_what_postgres_reads_back(server: Engine, value: Any) -> None:
    with server.connect() as conn:
        read_back = conn.execute(
            text("SELECT CAST(:value AS jsonb)"), {"value": canonical_json(value)}
        ).scalar_one()
    assert same_json(jsonb_form(value), read_back)
    if canonical_json(read_back) != canonical_json(value):
        # The store lost the difference: its form may stand for more than one payload.
        assert ambiguous("deposits", {"field": read_back})


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    count=st.integers(0, 120),
    cuts=st.lists(st.integers(0, 120), max_size=5),
)
def test_chained_chunks_give_one_run_over_everything(seed: int, count: int, cuts: list[int]):
    events = generate_events(count, accounts=8, seed=seed, bad_fraction=0.1, duplicate_fraction=0.2)
    whole = run_serial(LEDGER, events)
    chained = SerialRun(LEDGER)
    bounds = [0, *sorted(c for c in cuts if c <= count), count]
    parts = [chained.run(events[a:b]) for a, b in pairwise(bounds)]

    def joined(name: str) -> list:
        return [item for part in parts for item in getattr(part, name)]

    assert [(o.request_id, o.status) for o in joined("outcomes")] == [
        (o.request_id, o.status) for o in whole.outcomes
    ]
    for name in ("rejections", "duplicates", "changes", "results"):
        assert joined(name) == getattr(whole, name), name
    assert chained.state == whole.state


def test_a_chain_remembers_request_ids_by_fingerprint_not_by_event():
    # A chain over a whole log must not hold every event of it: after each run, what it
    # remembers of a request id is the fingerprint of the id's first event.
    events = generate_events(60, accounts=8, seed=3, bad_fraction=0.1, duplicate_fraction=0.2)
    chained = SerialRun(LEDGER)
    for a, b in pairwise([0, 20, 60]):
        chained.run(events[a:b])
        firsts = {}
        for event in events[:b]:
            if isinstance(event.request_id, str) and event.request_id:
                firsts.setdefault(event.request_id, event)
        assert set(chained.seen) <= set(firsts)
        for request_id, remembered in chained.seen.items():
            assert remembered == firsts[request_id].fingerprint(), request_id


# -- a committed ledger, replayed --------------------------------------------------------------


@pytest.fixture
def ledger_copy(
    committed_ledger_url: str, make_database_url: Callable[..., str]
) -> Iterator[Engine]:
    """A copy of the committed ledger, for one test to change."""
    engine = connect(make_database_url(template=committed_ledger_url))
    yield engine
    engine.dispose()


def test_an_untouched_ledger_replays_clean_with_progress(ledger_copy: Engine) -> None:
    progress: list[ReplayProgress] = []

    checks = replay_checks(ledger_copy, LEDGER, progress.append, chunk_lines=5)

    assert [c.name for c in checks] == CHECKS
    assert {c.suite for c in checks} == {"replay"}
    assert failures(checks) == {}
    # 16 lines in two batches, five at a time: four chunks, then each table, then the end.
    assert [p.phase for p in progress] == ["events"] * 4 + ["tables"] * 2 + ["done"]
    assert [p.events_done for p in progress[:4]] == [5, 10, 15, 16]
    assert [p.batch_id for p in progress[:4]] == [0, 0, 1, 1]
    assert [p.batches_done for p in progress[:4]] == [0, 0, 1, 2]
    assert [p.table for p in progress[4:6]] == ["accounts", "asset_ledger"]
    last = progress[-1]
    assert (last.events_total, last.batches_total, last.fraction) == (16, 2, 1.0)
    assert last.differences == 0
    assert "16/16 events" in progress[3].describe()


# Tampering: statements, then the checks that must fail and a phrase each must find.
TAMPERS: dict[str, tuple[tuple[str, ...], dict[str, list[str]]]] = {
    "a changed balance": (
        ("UPDATE accounts SET value = value + 1 WHERE key = 'bob'",),
        {"table accounts": ["accounts 'bob': stored 81, the serial runner gives 80"]},
    ),
    "a forged result": (
        (
            "UPDATE ledger_results SET payload = jsonb_set(payload, '{balance}', '1000000')"
            " WHERE request_id = 'b1'",
        ),
        {
            "results": [
                "batch 1 position 3 (request 'b1') seq 0: payload.balance stored 1000000,"
                " the serial runner gives 90"
            ]
        },
    ),
    "a changed rejection reason": (
        ("UPDATE ledger_rejections SET reason = 'type_error' WHERE request_id = 'd4'",),
        {
            "rejections": [
                "batch 0 position 6 (request 'd4')",
                "reason stored 'type_error', the serial runner gives 'aborted'",
            ]
        },
    ),
    "a deleted change-log row": (
        ("DELETE FROM ledger_change_log WHERE (batch_id, position, seq) = (0, 3, 1)",),
        {
            "change log": [
                "batch 0 position 3 (request 't1') seq 1 (accounts 'bob'): not in the store",
                "before 50, after 80",
            ]
        },
    ),
    "a transfer's amount changed in the event log": (
        (
            "UPDATE ledger_events SET payload = jsonb_set(payload, '{amount}', '10')"
            " WHERE request_id = 't1' AND outcome = 'applied'",
        ),
        {
            "executed requests": [
                "batch 0 position 3 (request 't1'): executed request stored 't1' applied with"
                " fingerprint"
            ],
            "change log": ["batch 0 position 3 (request 't1') seq 0 (accounts 'alice')"],
            # The balance lookup b1 reads alice's balance.
            "results": ["batch 1 position 3 (request 'b1') seq 0"],
            "table accounts": [
                "accounts 'alice': stored 90, the serial runner gives 110",
                "accounts 'bob': stored 80, the serial runner gives 60",
            ],
        },
    ),
    "a rejected event's stored stream that its bytes do not give": (
        (
            "UPDATE ledger_events SET stream = 'transfers'"
            " WHERE request_id = 'd4' AND outcome = 'rejected'",
        ),
        {
            "event log": [
                "batch 0 position 6 (request 'd4')",
                "stream stored 'transfers', its line gives 'deposits'",
            ]
        },
    ),
    "a duplicate's kind": (
        ("UPDATE ledger_duplicates SET kind = 'exists' WHERE request_id = 't1'",),
        {
            "duplicates": [
                "batch 1 position 0 (request 't1')",
                "kind stored 'exists', the serial runner gives 'exists_with_different_payload'",
            ]
        },
    ),
}


@pytest.mark.parametrize("case", TAMPERS)
def test_a_change_behind_the_engines_back_is_found_and_located(
    ledger_copy: Engine, case: str
) -> None:
    statements, expected = TAMPERS[case]
    with ledger_copy.begin() as conn:
        for statement in statements:
            assert conn.execute(text(statement)).rowcount == 1, statement

    found = failures(replay_checks(ledger_copy, LEDGER))

    assert set(found) == set(expected), found
    for name, phrases in expected.items():
        for phrase in phrases:
            assert any(phrase in finding for finding in found[name]), (phrase, found[name])


# -- generated workloads, committed through Spark -----------------------------------------------

# Values whose stored form loses something (a float of 1e16 or more reads back as an int, -0.0
# as 0.0) next to ordinary ones; the bank ledger rejects every non-integer amount.
amounts = st.integers(1, 60) | st.sampled_from([0, -5, 2.5, 1e16, 10**16, -0.0, 0.0, "7"])
accounts = st.sampled_from(["alice", "bob"])
assets = st.sampled_from(["gold", "silver"])
bank_payloads = st.one_of(
    st.fixed_dictionaries(
        {"account_id": accounts, "asset_id": assets, "amount": amounts, "asset_amount": amounts}
    ),
    st.fixed_dictionaries(
        {
            "source_account_id": accounts,
            "target_account_id": accounts,
            "source_asset_id": assets,
            "target_asset_id": assets,
            "amount": amounts,
            "asset_amount": amounts,
        }
    ),
    st.fixed_dictionaries({"account_id": accounts}),
    # Payloads the event log keeps no form of: not objects, or holding a NUL.
    st.sampled_from([[1], [2], "x", None, {"account_id": "a\x00"}]),
)
envelopes = st.fixed_dictionaries(
    {
        "stream": st.sampled_from(["deposits", "transfers", "balance_lookups"])
        | st.sampled_from(["withdrawals", 5, "5", None]),
        # Few ids: retries and clashes within and across batches.
        "request_id": st.sampled_from(["r1", "r2", "r3", "r4", "r5"]) | st.sampled_from(["", 7]),
        "payload": bank_payloads,
    }
)
bad_lines = st.sampled_from([b"not json", b'{"stream": "deposits"', b"\xff\xfe", b"[1, 2]"])
batch_lines = st.lists(
    envelopes.map(lambda e: json.dumps(e).encode()) | bad_lines, min_size=1, max_size=10
)


def envelope(stream: Any, request_id: Any, amount: Any) -> bytes:
    payload = {"account_id": "alice", "asset_id": "gold", "amount": amount, "asset_amount": 1}
    return json.dumps({"stream": stream, "request_id": request_id, "payload": payload}).encode()


# Clashes the stored form cannot tell from retries, and retries it can.
LOSSY_BATCH = [
    envelope("deposits", "r1", 1e16),  # rejected: a float amount (its bytes are kept)
    envelope("deposits", "r1", 10**16),  # a clash, whose stored form equals the first's
    envelope("deposits", "r1", 1e16),  # a retry
    envelope("deposits", "r2", -0.0),
    envelope("deposits", "r2", 0.0),  # a clash again
    json.dumps({"stream": 5, "request_id": "r3", "payload": [1]}).encode(),
    json.dumps({"stream": "5", "request_id": "r3", "payload": [2]}).encode(),  # a clash
    envelope("deposits", "r4", 30),  # applied
    envelope("deposits", "r4", 31),  # a clash the store tells apart
]


def test_replay_finds_nothing_in_what_the_engine_committed(engine: Engine, commit_files) -> None:
    batches = iter(range(100))

    @settings(
        max_examples=4,  # and the explicit example; each batch costs a Spark commit
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(lines=batch_lines)
    @example(lines=LOSSY_BATCH)
    def one_more_batch(lines: list[bytes]) -> None:
        batch_id = next(batches)
        summary = commit_files(engine, batch_id, [(f"{batch_id:03d}.jsonl", b"\n".join(lines))])
        assert summary.committed

        checks = replay_checks(engine, LEDGER, chunk_lines=7)

        assert failures(checks) == {}

    one_more_batch()
