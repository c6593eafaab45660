"""Which ledger movements a run of a source considers for an account: every movement of a
reconciled account until it is matched or in a break, whenever the account first appears."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine

from ledger_engine.reconcile.inbox import land_statement
from ledger_engine.reconcile.matching.reference import match
from ledger_engine.reconcile.rules import AmountCriterion, Rule
from ledger_engine.reconcile.run import reconcile
from ledger_engine.reconcile.sources import Sources
from tests.support.bank import deposit
from tests.support.database import rows
from tests.support.events import event_file
from tests.support.reconcile import csv_source

RULE = Rule("same reference", 0, amount=AmountCriterion(0), window_days=1, reference_similarity=1.0)
KEYED = csv_source(
    "bank",
    None,
    columns={"booking_date": "Date", "amount": "Amount", "reference": "Ref", "account": "Acct"},
    rules=(RULE,),
)
SOURCES = Sources({"bank": KEYED}, digest="k" * 64)


def open_reasons(engine: Engine) -> list[tuple]:
    return rows(engine, "SELECT account, reason FROM open_breaks ORDER BY account, reason")


def test_an_account_first_stated_after_a_run_matches_its_earlier_movements(
    engine: Engine, commit_files, tmp_path: Path
):
    commit_files(
        engine,
        0,
        [
            (
                "b0.jsonl",
                event_file(
                    [
                        deposit("a1", "alice", 10_000, reference="A1", value_date="2026-11-02"),
                        deposit("b1", "bob", 700, reference="B1", value_date="2026-11-02"),
                    ]
                ),
            )
        ],
    )
    reconcile(engine, SOURCES, tmp_path, match, who="pytest")  # an empty inbox
    land_statement(tmp_path, KEYED, "1.csv", b"Date,Amount,Ref,Acct\n2026-11-02,7.00,B1,bob\n")

    (part,) = reconcile(engine, SOURCES, tmp_path, match, who="pytest").sources

    assert [m.ledger_ids for m in part.outcome.matches] == [((0, 1, 0),)]
    assert open_reasons(engine) == []
