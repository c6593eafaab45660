"""Several ledgers live in one database side by side, each in a schema of its own: their
tables, logs and run leases never meet, and each gives what `run_serial` gives."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from ledger_engine import Event, run_serial
from ledger_engine.apps import load_ledger
from ledger_engine.apps.bank.generator import generate_events
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.store.database import connect, ledger_schema, ledger_url
from ledger_engine.store.lease import run_lease
from ledger_engine.store.migrations import migrate
from ledger_engine.store.schema import apply_declared_schema
from ledger_engine.store.state import state_rows
from tests.support.database import rows
from tests.support.events import event_file

SIMPLE_TRADE = Path(__file__).parents[1] / "support" / "apps" / "simple_trade.py"


@pytest.fixture
def two_ledgers(empty_database_url: str) -> Iterator[dict[str, tuple]]:
    """The bank and the simple trade example migrated into one database: name -> (ledger,
    engine on its schema)."""
    opened = {}
    for ledger in (build_ledger(), load_ledger(f"{SIMPLE_TRADE}:build_ledger")):
        engine = connect(ledger_url(empty_database_url, ledger))
        migrate(engine)
        apply_declared_schema(engine, ledger)
        opened[ledger.name] = (ledger, engine)
    yield opened
    for _, engine in opened.values():
        engine.dispose()


def schema_tables(engine: Engine, schema: str) -> set[str]:
    found = rows(
        engine, "SELECT table_name FROM information_schema.tables WHERE table_schema = :s", s=schema
    )
    return {name for (name,) in found}


def test_each_ledger_has_its_schema_with_its_own_tables(two_ledgers):
    (bank, bank_engine), (trade, trade_engine) = two_ledgers.values()
    bank_tables = schema_tables(bank_engine, ledger_schema(bank))
    trade_tables = schema_tables(trade_engine, ledger_schema(trade))
    assert ledger_schema(bank) == "bank"
    assert {"accounts", "asset_ledger", "reconciled_balances", "ledger_events"} <= bank_tables
    assert {t.sql_name for t in trade.tables.values()} | {"ledger_events"} <= trade_tables
    assert not (bank_tables - trade_tables) & {t.sql_name for t in trade.tables.values()}
    assert "asset_ledger" not in trade_tables


def test_the_run_leases_of_two_ledgers_do_not_exclude_each_other(two_ledgers):
    (_, bank_engine), (_, trade_engine) = two_ledgers.values()
    with (
        run_lease(bank_engine, "bank run", wait_seconds=0) as bank_lease,
        run_lease(trade_engine, "trade run", wait_seconds=0) as trade_lease,
    ):
        assert bank_lease.epoch == trade_lease.epoch == 1  # each ledger's first run


def test_batches_of_two_ledgers_commit_side_by_side_as_serially(two_ledgers, commit_files):
    (bank, bank_engine), (trade, trade_engine) = two_ledgers.values()
    from simple_trade import sample_events  # loaded from its file by load_ledger

    bank_events = generate_events(300, accounts=20, seed=3)
    trade_events = sample_events(300, accounts=15, seed=4)
    # The same request id in both ledgers: each executes its own, neither is a duplicate.
    shared = Event("balance_lookups", trade_events[0].request_id, {"account_id": "acct-1"})
    bank_events.append(shared)
    commit_files(bank_engine, 0, [("inbox/0001.jsonl", event_file(bank_events))], bank)
    commit_files(trade_engine, 0, [("inbox/0001.jsonl", event_file(trade_events))], trade)

    for ledger, engine, events in (
        (bank, bank_engine, bank_events),
        (trade, trade_engine, trade_events),
    ):
        expected = run_serial(ledger, events)
        with engine.connect() as conn:
            for table in ledger.tables.values():
                stored = dict(state_rows(conn, table))
                assert stored == expected.state[table.name], table.name
        assert rows(engine, "SELECT count(*) FROM ledger_duplicates") == [
            (len(expected.duplicates),)
        ]
        assert rows(engine, "SELECT count(*) FROM ledger_events") == [(len(events),)]
