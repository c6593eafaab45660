"""`ledger balance` reads a row's amount as money in its table's declared unit: the bank's
accounts in euros to the cent, its asset entries in whole units. (Any ledger's rows, with or
without a unit: tests/apps/test_any_ledger.py.)"""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from ledger_engine.cli import main
from tests.support.bank import deposit
from tests.support.events import event_file


def test_a_balance_reads_as_money_in_the_tables_unit(
    engine: Engine, commit_files, monkeypatch: pytest.MonkeyPatch, capsys
):
    events = [deposit("d1", "alice", 123_456, asset_amount=1_500), deposit("d2", "bob", 7)]
    commit_files(engine, 0, [("b0.jsonl", event_file(events))])
    monkeypatch.setenv("LEDGER_DATABASE_URL", engine.url.render_as_string(hide_password=False))

    assert main(["balance", "alice"]) == 0
    assert main(["balance", "bob", "--table", "accounts"]) == 0
    assert main(["balance", "asset-alice", "--table", "asset_ledger"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "alice: 1,234.56 EUR (last changed in batch 0)",
        "bob: 0.07 EUR (last changed in batch 0)",
        "asset-alice: 1,500 units (last changed in batch 0)",
    ]
