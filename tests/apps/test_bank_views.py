"""The bank's views, as a reader queries them: an account's statement shows each movement with
the reference, value date and description its event gave; the reconciled balances show, beside
each balance, what the last statement said of the account and the drift. Every amount has its
text beside it, as money in the unit the accounts declare (EUR/2)."""

from __future__ import annotations

from datetime import date

from sqlalchemy import Engine, text

from ledger_engine.reconcile.sources import Sources
from ledger_engine.reconcile.statement_inbox import land_statement, load_statements
from tests.support.bank import deposit, transfer
from tests.support.database import rows
from tests.support.events import event_file
from tests.support.reconcile import csv_source


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
    # Beside each amount of minor units, the text a person reads in the accounts' unit.
    assert rows(
        engine,
        "SELECT amount_text, balance_after_text FROM account_statements"
        " ORDER BY batch_id, position, account_id",
    ) == [("1.00 EUR", "1.00 EUR"), ("-0.30 EUR", "0.70 EUR"), ("0.30 EUR", "0.30 EUR")]


def test_reconciled_balances_show_the_last_stated_balance_and_the_drift(
    engine: Engine, commit_files, tmp_path
):
    commit_files(engine, 0, [("b0.jsonl", event_file([deposit("d1", "alice", 10_000)]))])
    commit_files(engine, 1, [("b1.jsonl", event_file([deposit("d2", "bob", 500)]))])
    columns = {"booking_date": "Date", "amount": "Amount", "balance": "Balance"}
    bank = csv_source("bank", "alice", columns=columns)
    # Stated as of the end of a day after every commit: the ledger's balance then is today's.
    land_statement(tmp_path, bank, "s.csv", b"Date,Amount,Balance\n2099-01-01,100.00,100.50\n")
    load_statements(engine, Sources({"bank": bank}, "d" * 64), tmp_path)

    assert rows(
        engine,
        "SELECT account_id, balance, statement_balance, ledger_balance_then, drift,"
        " statement_source FROM reconciled_balances ORDER BY account_id",
    ) == [("alice", 10_000, 10_050, 10_000, 50, "bank"), ("bob", 500, None, None, None, None)]
    assert rows(
        engine,
        "SELECT balance_text, statement_balance_text, ledger_balance_then_text, drift_text"
        " FROM reconciled_balances ORDER BY account_id",
    ) == [
        ("100.00 EUR", "100.50 EUR", "100.00 EUR", "0.50 EUR"),
        ("5.00 EUR", None, None, None),
    ]


def test_without_a_recorded_unit_the_views_show_plain_integers(engine: Engine, commit_files):
    commit_files(engine, 0, [("b0.jsonl", event_file([deposit("d1", "alice", 1_234_567)]))])
    with engine.begin() as conn:  # as a ledger recorded before it declared a unit reads
        conn.execute(
            text(
                "UPDATE ledger_declared_tables SET unit_code = NULL, unit_precision = NULL"
                " WHERE table_name = 'accounts'"
            )
        )
    assert rows(engine, "SELECT balance, balance_text FROM reconciled_balances") == [
        (1_234_567, "1,234,567")
    ]
    assert rows(engine, "SELECT amount_text FROM account_statements") == [("1,234,567",)]
