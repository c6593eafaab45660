"""The serial oracle (`audit.rederivation.oracle.serial_differences`) decides the crash, outage and
concurrency tests by reporting nothing; these are its positive controls: on a copy of a
committed ledger, each difference planted behind the engine's back (a balance, a change-log
row, an event's outcome, a batch's counts, a file read again with other bytes, a file no batch
took) is reported, naming what differs; untouched, the same ledger gives no finding.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import text

from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.audit.rederivation.oracle import serial_differences
from ledger_engine.store.database import connect
from tests.support.bank import deposit
from tests.support.bank_workload import bank_batches
from tests.support.events import event_file

LEDGER = build_ledger()


def landed(inbox: Path, committed_url: str) -> None:
    """The files the committed batches took, in `inbox` under the names they were taken by."""
    contents = dict(zip(("0001.jsonl", "0002.jsonl"), bank_batches(), strict=True))
    engine = connect(committed_url)
    try:
        with engine.connect() as conn:
            names = [
                n
                for (files,) in conn.execute(text("SELECT input_files FROM ledger_batches"))
                for n in files
            ]
    finally:
        engine.dispose()
    assert sorted(names) == sorted(contents), names
    inbox.mkdir(parents=True)
    for name, content in contents.items():
        (inbox / name).write_bytes(content)


def differences(url: str, inbox: Path, statements: tuple[str, ...] = ()) -> list[str]:
    engine = connect(url)
    try:
        with engine.begin() as conn:
            for statement in statements:
                conn.execute(text(statement))
        return serial_differences(engine, LEDGER, inbox)
    finally:
        engine.dispose()


@pytest.fixture
def copy(committed_ledger_url: str, make_database_url: Callable[..., str], tmp_path: Path):
    """A copy of the committed bank workload, and an inbox holding the files it took."""
    inbox = tmp_path / "landed"
    landed(inbox, committed_ledger_url)
    return make_database_url(template=committed_ledger_url), inbox


def test_the_untouched_ledger_is_what_the_serial_runner_gives(copy) -> None:
    url, inbox = copy
    assert differences(url, inbox) == []


PLANTED = {
    "a balance": (
        ("UPDATE accounts SET value = value + 1000 WHERE key = 'bob'",),
        "bob",
    ),
    "an event's outcome": (
        ("UPDATE ledger_events SET outcome = 'rejected' WHERE request_id = 't3'",),
        "t3",
    ),
    "a change-log row": (
        (
            "DELETE FROM ledger_change_log WHERE (batch_id, position, seq) = ("
            " SELECT batch_id, position, seq FROM ledger_change_log"
            " WHERE table_name = 'accounts' AND key = 'carol'"
            " ORDER BY batch_id DESC, position DESC, seq DESC LIMIT 1)",
        ),
        "carol",
    ),
    "a batch's counts": (
        ("UPDATE ledger_batches SET changes = changes + 1 WHERE batch_id = 1",),
        "changes",
    ),
}


@pytest.mark.parametrize("planted", list(PLANTED), ids=list(PLANTED))
def test_a_difference_planted_in_the_system_of_record_is_reported(copy, planted: str) -> None:
    url, inbox = copy
    statements, named = PLANTED[planted]

    found = differences(url, inbox, statements)

    assert found, f"{planted}: no difference reported"
    assert any(named in finding for finding in found), found


def test_a_file_read_again_with_other_bytes_is_reported(copy) -> None:
    url, inbox = copy
    taken = inbox / "0002.jsonl"
    taken.write_bytes(taken.read_bytes() + event_file([deposit("late", "erin", 1)]))

    found = differences(url, inbox)

    assert found and any("late" in finding or "erin" in finding for finding in found), found


def test_a_landed_file_no_batch_took_is_reported(copy) -> None:
    url, inbox = copy
    (inbox / "0003.jsonl").write_bytes(event_file([deposit("d9", "erin", 1)]))

    found = differences(url, inbox)

    assert any(
        "landed files in no batch" in finding and "0003.jsonl" in finding for finding in found
    ), found
