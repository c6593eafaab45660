"""Which ledger movements a run of a source considers for an account: every movement of a
reconciled account, from the source's start, until it is matched or in a break, whenever the
account first appears; so the outcome does not depend on when runs happened relative to
statements arriving (the scope in `ledger_engine.reconcile.matching`'s specification)."""

from __future__ import annotations

import itertools
import shutil
import tempfile
from dataclasses import replace
from datetime import date, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from sqlalchemy import Engine, text

from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.reconcile.matching.reference import match
from ledger_engine.reconcile.matching.spark import spark_matcher
from ledger_engine.reconcile.run import reconcile
from ledger_engine.reconcile.sources import Sources
from ledger_engine.reconcile.statement_inbox import land_statement, load_statements
from ledger_engine.reconcile.storage.runs import Start, scope_in
from ledger_engine.store.database import ledger_url
from ledger_engine.store.migrations import migrate, migrations
from ledger_engine.store.schema import apply_declared_schema
from tests.support.bank import deposit
from tests.support.database import empty_ledger, rows, table_reads
from tests.support.events import event_file
from tests.support.recon_history import (
    COMMIT,
    DAY,
    LAND,
    RULES,
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
from tests.support.reconcile import csv_source
from tests.support.serial_commit import SerialCommits

KEYED = keyed_source()
SOURCES = Sources({KEYED.name: KEYED}, digest="k" * 64)
DEPOSIT_A0 = deposit("a0", "alice", 500, reference="A-0", value_date="2026-11-01")
DEPOSIT_B0 = deposit("b0", "bob", 700, reference="B-0", value_date="2026-11-01")
DEPOSIT_A1 = deposit("a1", "alice", 300, reference="A-1", value_date="2026-11-03")


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


# Through the pipeline and the Spark matcher: b and c appear after runs, c after a batch that
# came after a run; b's entry is 100 off, c's is sent again beside one the ledger lacks.
THROUGH_SPARK = History(
    batches=(
        (
            Movement("a-d0", "acct-a", 500, DAY, "A-0"),
            Movement("b-d0", "acct-b", 700, DAY, "B-0"),
            Movement("z-0", "acct-z", 1, DAY, "Z-0"),
        ),
        (
            Movement("a-d1", "acct-a", 800, DAY + timedelta(days=1), "A-1"),
            Movement("c-d0", "acct-c", 300, DAY, "C-0"),
            Movement("z-1", "acct-z", 2, DAY, "Z-1"),
        ),
    ),
    files=(
        (Entry("acct-a", 500, DAY, "A-0"), Entry("acct-a", 820, DAY + timedelta(days=2), "A-1")),
        (Entry("acct-b", 800, DAY, "B-0"),),
        (Entry("acct-c", 300, DAY, "C-0"), Entry("acct-c", 10_000, DAY, None)),
        (Entry("acct-c", 300, DAY, "C-0"),),
    ),
    steps=(COMMIT, RUN, LAND, RUN, COMMIT, RUN, LAND, LAND, RUN, LAND),
)


def test_a_history_through_the_pipeline_and_the_spark_matcher_ends_as_the_oracle_says(
    engine: Engine, commit_files, spark, tmp_path: Path
):
    batch_ids = itertools.count()

    play(
        THROUGH_SPARK,
        engine,
        tmp_path,
        lambda files: commit_files(engine, next(batch_ids), files),
        spark_matcher(spark),
    )

    matches, breaks = stored_outcome(engine, KEYED.name)
    assert (matches, breaks) == outcome_decided(oracle(engine, THROUGH_SPARK))
    assert sorted(m[0] for m in matches) == ["exact", "exact", "near"]
    assert sorted((b[1], b[0]) for b in breaks) == [
        ("acct-b", "amount_mismatch"),
        ("acct-c", "duplicate"),
        ("acct-c", "missing_in_ledger"),
    ]


# --- Declarations: accounts added and dropped, a start declared and moved -------------------

MAPPED_COLUMNS = {"booking_date": "Date", "amount": "Amount", "reference": "Ref", "account": "Iban"}


def mapped_source(accounts: dict[str, str], **fields) -> Sources:
    """A CSV source whose statements name accounts by IBAN, mapped to `accounts`' rows."""
    source = replace(
        csv_source("bank", None, columns=MAPPED_COLUMNS, rules=RULES), accounts=accounts, **fields
    )
    return Sources({source.name: source}, digest="m" * 64)


def reconciled(engine: Engine, sources: Sources, inbox: Path):
    """Reconcile `sources` (the reference matcher); the one source's part."""
    (part,) = reconcile(engine, sources, inbox, match, who="pytest").sources
    return part


def test_an_account_added_to_a_declaration_brings_its_movements_and_one_dropped_none_new(
    engine: Engine, tmp_path: Path
):
    batches = SerialCommits(engine, build_ledger())
    batches.commit([("0.jsonl", event_file([DEPOSIT_A0, DEPOSIT_B0]))])
    alone = mapped_source({"IBAN-A": "alice"})
    land_statement(
        tmp_path,
        alone.sources["bank"],
        "1.csv",
        b"Date,Amount,Ref,Iban\n2026-11-01,5.00,A-0,IBAN-A\n",
    )
    assert reconciled(engine, alone, tmp_path).scope.appearing == ("alice",)

    both = mapped_source({"IBAN-A": "alice", "IBAN-B": "bob"})
    land_statement(
        tmp_path,
        both.sources["bank"],
        "2.csv",
        b"Date,Amount,Ref,Iban\n2026-11-01,7.00,B-0,IBAN-B\n",
    )
    part = reconciled(engine, both, tmp_path)
    assert part.scope.appearing == ("bob",)
    assert [m.ledger_ids for m in part.outcome.matches] == [((0, 1, 0),)]

    batches.commit([("1.jsonl", event_file([DEPOSIT_A1]))])
    bob_only = mapped_source({"IBAN-B": "bob"})
    assert reconciled(engine, bob_only, tmp_path).scope.ledger_items == ()
    assert rows(engine, "SELECT account FROM ledger_recon_accounts") == [("bob",)]

    part = reconciled(engine, both, tmp_path)  # alice declared again: read from the start
    assert part.scope.appearing == ("alice",)
    assert [i.request_id for i in part.scope.ledger_items] == ["a1"]  # a0 stays matched
    assert open_reasons(engine) == [("alice", "missing_in_statement")]


@pytest.mark.parametrize(
    "start", [{"from_batch": 1}, {"from_date": date(2026, 11, 2)}], ids=["batch", "date"]
)
def test_a_declared_start_leaves_out_earlier_movements_until_it_moves_earlier(
    engine: Engine, tmp_path: Path, start: dict
):
    batches = SerialCommits(engine, build_ledger())
    batches.commit([("0.jsonl", event_file([DEPOSIT_A0]))])  # dated 2026-11-01
    batches.commit([("1.jsonl", event_file([DEPOSIT_A1]))])  # dated 2026-11-03
    later = mapped_source({"IBAN-A": "alice"}, **start)
    land_statement(
        tmp_path,
        later.sources["bank"],
        "1.csv",
        b"Date,Amount,Ref,Iban\n2026-11-03,3.00,A-1,IBAN-A\n",
    )

    part = reconciled(engine, later, tmp_path)

    assert [i.request_id for i in part.scope.ledger_items] == ["a1"]
    assert len(part.outcome.matches) == 1 and open_reasons(engine) == []
    assert rows(engine, "SELECT from_batch, from_date FROM ledger_recon_runs") == [
        (start.get("from_batch", 0), start.get("from_date"))
    ]

    part = reconciled(engine, mapped_source({"IBAN-A": "alice"}), tmp_path)  # from the first

    assert part.scope.appearing == ("alice",)
    assert [i.request_id for i in part.scope.ledger_items] == ["a0"]  # a1 stays matched
    assert open_reasons(engine) == [("alice", "missing_in_statement")]


# --- A ledger reconciled before sql/0024 --------------------------------------------------


def test_a_ledger_reconciled_before_0024_finds_the_movements_its_runs_missed(
    empty_database_url: str, engine_on, tmp_path: Path
):
    ledger = build_ledger()
    engine = engine_on(ledger_url(empty_database_url, ledger))
    before = tmp_path / "sql"
    before.mkdir()
    # Today's commit writes what 0025 adds (the change links) and today's statement loader what
    # 0026 and 0028 add (a balance's statement and date); 0024 is the runs' scope alone, so a
    # ledger with every migration but 0024 is what the runs before 0024 left, to it.
    for migration in migrations():
        if migration.version != "0024":
            shutil.copy(migration.path, before)
    migrate(engine, before)
    apply_declared_schema(engine, ledger)
    SerialCommits(engine, ledger).commit([("0.jsonl", event_file([DEPOSIT_B0]))])
    # What the runs before 0024 left: one on an empty inbox, then one that loaded bob's
    # first statement and, reading only batches after the first run's, missed his deposit.
    inbox = tmp_path / "statements"
    land_statement(inbox, KEYED, "1.csv", b"Date,Amount,Ref,Acct\n2026-11-01,7.00,B-0,bob\n")
    load_statements(engine, SOURCES, inbox)
    with engine.begin() as conn:
        for through_file, opened in ((0, 0), (1, 1)):
            conn.execute(
                text(
                    "INSERT INTO ledger_recon_runs (source, sources_digest, through_batch,"
                    " through_file, statement_items, ledger_items, matches, breaks_opened,"
                    " breaks_closed, who, started_at) VALUES ('bank', 'old', 0, :file,"
                    " :file, 0, 0, :opened, 0, 'before 0024', now())"
                ),
                {"file": through_file, "opened": opened},
            )
        conn.execute(
            text(
                "INSERT INTO ledger_recon_breaks (source, reason, account, file_id, position,"
                " opened_run_id) VALUES ('bank', 'missing_in_ledger', 'bob', 1, 2, 2)"
            )
        )
    assert migrate(engine) == ["0024"]

    part = reconciled(engine, SOURCES, inbox)

    assert part.scope.appearing == ("bob",)  # its start was never recorded: read again
    assert [m.ledger_ids for m in part.outcome.matches] == [((0, 0, 0),)]
    assert rows(engine, "SELECT status, resolution FROM ledger_recon_breaks") == [
        ("resolved", "matched")
    ]
    assert rows(engine, "SELECT account FROM ledger_recon_accounts") == [("bob",)]


# --- Cost: what is new and open, not the ledger's history -----------------------------------

OTHERS = 3_000  # movements of other accounts committed before bob first appears
READ = ("ledger_change_log", "ledger_events")


def deposits_of_others(first: int, count: int) -> list:
    return [
        deposit(f"o{n}", f"other-{n % 500}", 100 + n, reference=f"O-{n}")
        for n in range(first, first + count)
    ]


def test_an_account_first_appearing_reads_its_own_movements_not_the_others(
    engine: Engine, tmp_path: Path
):
    batches = SerialCommits(engine, build_ledger())
    batches.commit([("0.jsonl", event_file([DEPOSIT_B0, *deposits_of_others(0, OTHERS // 2)]))])
    batches.commit(
        [
            (
                "1.jsonl",
                event_file(
                    [
                        *deposits_of_others(OTHERS // 2, OTHERS // 2),
                        deposit("b1", "bob", 1, reference="B-1"),
                    ]
                ),
            )
        ]
    )
    reconciled(engine, SOURCES, tmp_path)  # an empty inbox: nothing reconciled yet
    land_statement(tmp_path, KEYED, "1.csv", b"Date,Amount,Ref,Acct\n2026-11-01,7.00,B-0,bob\n")
    load_statements(engine, SOURCES, tmp_path)

    scope, read = scope_reads(engine)

    assert scope.appearing == ("bob",)
    assert [i.request_id for i in scope.ledger_items] == ["b0", "b1"]
    # The ledger's rows read (scans, rows scanned, rows fetched by index): no scan of its
    # history, and by index bob's two changes and their two events, of the 6,004 and 3,002.
    assert read == {"ledger_change_log": [0, 0, 2], "ledger_events": [0, 0, 2]}

    reconciled(engine, SOURCES, tmp_path)  # b0 matched, b1 missing in the statement
    new = [*deposits_of_others(OTHERS, 100), deposit("b2", "bob", 5, reference="B-2")]
    batches.commit([("2.jsonl", event_file(new))])

    scope, read = scope_reads(engine)

    assert scope.appearing == ()
    assert [i.request_id for i in scope.ledger_items] == ["b1", "b2"]
    # What is open (b1's break, by its key) and new (b2, among the new batch's 202 changes):
    # none of the history's changes, and only their two events.
    assert read["ledger_change_log"][:2] == [0, 0] and read["ledger_change_log"][2] <= 1 + 202
    assert read["ledger_events"] == [0, 0, 2]


def scope_reads(engine: Engine):
    """The scope a run of `KEYED` reads now, and the ledger's rows it read (`READ`)."""
    with engine.begin() as conn:  # one transaction: the counters move by its reads alone
        cursor = conn.connection.cursor()
        before = table_reads(cursor, READ)
        scope = scope_in(cursor, KEYED.name, KEYED.table, None, Start())
        after = table_reads(cursor, READ)
    return scope, {t: [a - b for a, b in zip(after[t], before[t], strict=True)] for t in READ}
