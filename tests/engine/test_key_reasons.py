"""An event whose payload names no row is rejected in the words of the payload the user wrote:
a binding that reads its key from a payload field names that field; one whose key comes from
a function of the payload names the binding, its table and what the payload held. Every
runner gives the serial runner's words."""

from __future__ import annotations

from operator import itemgetter
from pathlib import Path

import pytest

from ledger_engine.apps import load_ledger
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.core.declarations import AccessType, StreamingLedger
from ledger_engine.core.records import Event
from ledger_engine.runtime.parallel.in_process import partitioned_runner
from ledger_engine.runtime.serial import run_serial
from ledger_engine.runtime.spark.engine import ExecutionOptions
from ledger_engine.runtime.spark.runner import spark_runner
from tests.support.bank import deposit, transfer

BANK = build_ledger()
SIMPLE_TRADE = Path(__file__).parents[1] / "support" / "apps" / "simple_trade.py"
ASSETS_AB = ("asset-a", "asset-b")


def rejected(ledger: StreamingLedger, events: list[Event]) -> list[tuple[str, str, str]]:
    """(request id, reason, detail) of each rejection of the serial runner."""
    return [(r.request_id, r.reason, r.detail) for r in run_serial(ledger, events).rejections]


def null_source(request_id: str) -> Event:
    event = transfer(request_id, "acct-a", "acct-b", 10, assets=ASSETS_AB)
    event.payload["source_account_id"] = None
    return event


def test_a_null_field_is_named_as_the_payload_names_it():
    assert rejected(BANK, [null_source("t1")]) == [
        ("t1", "bad_key", "field 'source_account_id' is null: it must name a row of 'accounts'")
    ]


def test_a_key_of_the_wrong_kind_is_named_by_its_field():
    events = [
        deposit("d1", ["acct-a"], 10, asset="asset-a"),
        transfer("t1", "acct-" + "a" * 1100, "acct-b", 5, assets=ASSETS_AB),
    ]
    assert rejected(BANK, events) == [
        ("d1", "type_error", "field 'account_id' must be a str, got list"),
        ("t1", "type_error", "field 'source_account_id' is longer than 1024 bytes"),
    ]


def notes_ledger(**bindings) -> StreamingLedger:
    """Table `notes` and stream `s`, whose one binding `note` has the key function given."""
    ledger = StreamingLedger.create("notes")
    notes = ledger.declare_state("notes", key_type=str, value_type=int)
    (key_fn,) = bindings.values()
    ledger.using_stream("s").apply(lambda event, ctx, note: note.write(1)).on(
        notes, key_fn, "note", AccessType.WRITE
    )
    return ledger


def test_a_users_binding_by_field_is_told_by_its_field():
    ledger = notes_ledger(key=itemgetter("note_id"))
    events = [Event("s", "r1", {"note_id": None}), Event("s", "r2", {"id": "n1"})]
    assert rejected(ledger, events) == [
        ("r1", "bad_key", "field 'note_id' is null: it must name a row of 'notes'"),
        # Its payload's fields are not declared: a field may be missing.
        ("r2", "bad_key", "payload lacks field 'note_id', which must name a row of 'notes'"),
    ]


def test_a_key_function_is_told_by_its_binding_its_table_and_what_the_payload_held():
    ledger = notes_ledger(key=lambda payload: payload["ids"][0])
    events = [
        Event("s", "r1", {"ids": [None, "n2"], "memo": "é"}),
        Event("s", "r2", {"ids": []}),
        Event("s", "r3", {"ids": [7]}),
    ]
    assert rejected(ledger, events) == [
        (
            "r1",
            "bad_key",
            "binding 'note' of stream 's' found no row of 'notes': its key function gave None"
            ' for the payload {"ids": [null, "n2"], "memo": "é"}',
        ),
        (
            "r2",
            "bad_key",
            "binding 'note' of stream 's' found no row of 'notes': its key function raised"
            ' IndexError: list index out of range for the payload {"ids": []}',
        ),
        (
            "r3",
            "type_error",
            "key of binding 'note' of stream 's' (a row of 'notes') must be a str, got int",
        ),
    ]


def test_a_long_payload_is_shown_cut_short():
    ledger = notes_ledger(key=lambda payload: None)
    ((_, _, detail),) = rejected(ledger, [Event("s", "r1", {"memo": "x" * 5_000})])
    assert detail.startswith("binding 'note' of stream 's' found no row of 'notes': its key")
    assert detail.endswith('for the payload {"memo": "' + "x" * 287 + "...")


@pytest.fixture(scope="module")
def runners(spark):
    return {
        "in process, 3 bins": partitioned_runner(bins=3),
        "spark, 2 bins, chunks of 4": spark_runner(spark, ExecutionOptions(bins=2, chunk=4)),
    }


TRADE_PAYLOAD = {
    "sourceAccountId": "a",
    "targetAccountId": None,
    "sourceBookEntryId": "b1",
    "targetBookEntryId": "b2",
    "accountTransfer": 1,
    "bookEntryTransfer": 1,
    "minAccountBalance": 0,
}


def test_every_runner_gives_the_serial_runners_words(runners):
    trade = load_ledger(f"{SIMPLE_TRADE}:build_ledger")
    from simple_trade import sample_events

    trade_events = [
        *sample_events(4, accounts=3, seed=5),
        Event("transactions", "x1", TRADE_PAYLOAD),
    ]
    bank_events = [null_source("t1"), deposit("d1", ["acct-a"], 10, asset="asset-a")]
    assert rejected(trade, trade_events) == [
        (
            "x1",
            "bad_key",
            "binding 'target' of stream 'transactions' found no row of 'accounts': its key"
            ' function gave None for the payload {"sourceAccountId": "a", "targetAccountId":'
            ' null, "sourceBookEntryId": "b1", "targetBookEntryId": "b2", "accountTransfer": 1,'
            ' "bookEntryTransfer": 1, "minAccountBalance": 0}',
        )
    ]
    for name, runner in runners.items():
        for ledger, events in ((BANK, bank_events), (trade, trade_events)):
            assert runner(ledger, events) == run_serial(ledger, events), name
