"""The bank's views, as a reader queries them: an account's statement shows each movement with
the reference, value date and description its event gave."""

from __future__ import annotations

from datetime import date

from sqlalchemy import Engine

from tests.support.bank import deposit, transfer
from tests.support.database import rows
from tests.support.events import event_file


def test_the_account_statement_shows_each_movements_details(engine: Engine, commit_files):
    events = [
        deposit(
            "d1",
            "alice",
            100,
            asset_amount=5,
            reference="E2E-1",
            value_date="2026-11-02",
            description="pay",
        ),
        transfer("t1", "alice", "bob", 30, reference="INV-7"),
    ]
    commit_files(engine, 0, [("b0.jsonl", event_file(events))])

    assert rows(
        engine,
        "SELECT account_id, request_id, amount, balance_after, reference, value_date, description"
        " FROM account_statements ORDER BY batch_id, position, account_id",
    ) == [
        ("alice", "d1", 100, 100, "E2E-1", date(2026, 11, 2), "pay"),
        ("alice", "t1", -30, 70, "INV-7", None, None),
        ("bob", "t1", 30, 30, "INV-7", None, None),
    ]
