"""Which ledger movements a run of a source considers for an account: every movement of a
reconciled account, from the source's start, until it is matched or in a break, whenever the
account first appears; so the outcome does not depend on when runs happened relative to
statements arriving (the scope in `ledger_engine.reconcile.matching`'s specification)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from sqlalchemy import Engine

from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.reconcile.inbox import land_statement
from ledger_engine.reconcile.matching.reference import match
from ledger_engine.reconcile.run import reconcile
from ledger_engine.reconcile.sources import Sources
from tests.support.bank import deposit
from tests.support.database import empty_ledger, rows
from tests.support.events import event_file
from tests.support.recon_history import (
    COMMIT,
    DAY,
    LAND,
    RUN,
    Entry,
    History,
    Movement,
    histories,
    keyed_source,
    oracle,
    outcome_decided,
    play,
    stored_outcome,
)
from tests.support.serial_commit import SerialCommits

KEYED = keyed_source()
SOURCES = Sources({KEYED.name: KEYED}, digest="k" * 64)


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

    assert part.scope.appearing == ("bob",)
    assert [m.ledger_ids for m in part.outcome.matches] == [((0, 1, 0),)]
    assert open_reasons(engine) == []


# The defect this file is about, as a history: a run before the account's first statement.
FIRST_STATED_AFTER_A_RUN = History(
    batches=(
        (Movement("a-d0", "acct-a", 500, DAY, "A-0"), Movement("z-0", "acct-z", 1, DAY, "Z")),
    ),
    files=((Entry("acct-a", 500, DAY, "A-0"),),),
    steps=(COMMIT, RUN, LAND),
)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@example(history=FIRST_STATED_AFTER_A_RUN)
@given(history=histories())
def test_after_the_last_run_the_outcome_is_the_whole_history_reconciled_at_once(
    history: History, engine: Engine
):
    empty_ledger(engine)  # one database for every example, emptied for each
    with tempfile.TemporaryDirectory() as inbox:
        play(history, engine, Path(inbox), SerialCommits(engine, build_ledger()).commit)

    assert stored_outcome(engine, KEYED.name) == outcome_decided(oracle(engine, history))


def test_an_entry_repeating_one_an_earlier_run_matched_is_a_duplicate(engine: Engine, tmp_path):
    SerialCommits(engine, build_ledger()).commit(
        [
            (
                "b0.jsonl",
                event_file([deposit("b1", "bob", 700, reference="B1", value_date="2026-11-02")]),
            )
        ]
    )
    statement = b"Date,Amount,Ref,Acct\n2026-11-02,7.00,B1,bob\n"
    land_statement(tmp_path, KEYED, "1.csv", statement)
    reconcile(engine, SOURCES, tmp_path, match, who="pytest")
    land_statement(tmp_path, KEYED, "2.csv", statement + b"2026-11-03,1.00,,bob\n")  # sent again

    reconcile(engine, SOURCES, tmp_path, match, who="pytest")

    assert open_reasons(engine) == [("bob", "duplicate"), ("bob", "missing_in_ledger")]
