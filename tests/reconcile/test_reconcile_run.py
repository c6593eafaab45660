"""A reconciliation run over the system of record: statements loaded, each item matched or
left as a break with its reason, the decisions kept in one transaction; reruns change nothing,
a later statement closes the breaks it explains, and a dry run writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine

from ledger_engine.core.money import Unit
from ledger_engine.reconcile.matching import (
    AMOUNT_MISMATCH,
    MISSING_IN_LEDGER,
    MISSING_IN_STATEMENT,
)
from ledger_engine.reconcile.matching.reference import match
from ledger_engine.reconcile.rules import AmountCriterion, Rule
from ledger_engine.reconcile.run import reconcile
from ledger_engine.reconcile.sources import Sources
from ledger_engine.reconcile.statement_inbox import land_statement
from ledger_engine.reconcile.storage import runs as reconciliation
from ledger_engine.reconcile.storage.statements import REJECTED, landings
from ledger_engine.tasks.reconcile_dag import breaks_changed
from tests.support.bank import deposit
from tests.support.database import rows
from tests.support.events import event_file
from tests.support.reconcile import csv_source

RULE = Rule("same reference", 0, amount=AmountCriterion(0), window_days=1, reference_similarity=1.0)
BANK = csv_source("bank", "alice", rules=(RULE,))
SOURCES = Sources({"bank": BANK}, digest="r" * 64)
MOVEMENTS = [
    deposit("d1", "alice", 10_000, reference="R1", value_date="2026-11-02"),
    deposit("d2", "alice", 5_000, reference="R2", value_date="2026-11-03"),
    deposit("d3", "alice", 700, reference="R3", value_date="2026-11-03"),
    deposit("d4", "bob", 900, reference="R1", value_date="2026-11-02"),  # not this source's row
]
STATEMENT = b"Date,Amount,Ref\n2026-11-02,100.00,R1\n2026-11-03,50.10,R2\n2026-11-04,12.00,R9\n"


def run(engine: Engine, inbox: Path, **options):
    return reconcile(engine, SOURCES, inbox, match, who="pytest", **options)


def open_breaks(engine: Engine) -> list[tuple]:
    return rows(
        engine,
        "SELECT reason, statement_reference, request_id, amount_difference FROM open_breaks"
        " ORDER BY break_id",
    )


@pytest.fixture
def committed(engine: Engine, commit_files) -> Engine:
    commit_files(engine, 0, [("b0.jsonl", event_file(MOVEMENTS))])
    return engine


def test_each_item_ends_matched_or_as_a_break_with_its_reason(committed: Engine, tmp_path):
    land_statement(tmp_path, BANK, "2026-11-04.csv", STATEMENT)

    report = run(committed, tmp_path)

    (part,) = report.sources
    assert [f.outcome for f in report.files] == ["loaded"]
    assert (len(part.scope.statement_items), len(part.scope.ledger_items)) == (3, 3)
    assert [(m.rule, m.statement_ids, m.amount_difference) for m in part.outcome.matches] == [
        ("same reference", ((1, 2),), 0)
    ]
    assert open_breaks(committed) == [
        (AMOUNT_MISMATCH, "R2", "d2", 10),
        (MISSING_IN_LEDGER, "R9", None, None),
        (MISSING_IN_STATEMENT, None, "d3", None),
    ]
    assert part.record is not None and (part.record.breaks_opened, part.record.breaks_closed) == (
        3,
        0,
    )
    assert rows(committed, "SELECT count(*) FROM ledger_recon_matched_changes") == [(1,)]
    # The record names the breaks it opened.
    assert sorted(part.record.opened_ids) == [
        i for (i,) in rows(committed, "SELECT break_id FROM ledger_recon_breaks ORDER BY 1")
    ]
    assert part.record.closed_ids == ()


def test_a_rerun_with_nothing_new_decides_the_same_and_changes_nothing(committed: Engine, tmp_path):
    land_statement(tmp_path, BANK, "2026-11-04.csv", STATEMENT)
    run(committed, tmp_path)
    before = open_breaks(committed), rows(committed, "SELECT break_id FROM ledger_recon_breaks")

    (part,) = run(committed, tmp_path).sources

    assert part.record is not None
    assert (part.record.matches, part.record.breaks_opened, part.record.breaks_closed) == (0, 0, 0)
    assert (
        open_breaks(committed),
        rows(committed, "SELECT break_id FROM ledger_recon_breaks"),
    ) == before


def test_a_later_statement_closes_the_break_it_explains(committed: Engine, tmp_path):
    land_statement(tmp_path, BANK, "2026-11-04.csv", STATEMENT)
    run(committed, tmp_path)
    land_statement(tmp_path, BANK, "2026-11-05.csv", b"Date,Amount,Ref\n2026-11-04,7.00,R3\n")

    (part,) = run(committed, tmp_path).sources

    assert [m.ledger_ids for m in part.outcome.matches] == [((0, 2, 0),)]
    assert part.record is not None and part.record.breaks_closed == 1
    assert part.record.closed_ids == tuple(
        i
        for (i,) in rows(
            committed, "SELECT break_id FROM ledger_recon_breaks WHERE status = 'resolved'"
        )
    )
    assert part.record.opened_ids == ()
    assert rows(
        committed, "SELECT breaks_opened, breaks_closed FROM ledger_recon_runs ORDER BY run_id"
    ) == [(3, 0), (0, 1)]
    assert [reason for reason, *_ in open_breaks(committed)] == [AMOUNT_MISMATCH, MISSING_IN_LEDGER]
    assert rows(
        committed,
        "SELECT h.action FROM ledger_recon_break_history AS h JOIN ledger_recon_breaks AS b"
        " USING (break_id) WHERE b.reason = 'missing_in_statement' ORDER BY h.seq",
    ) == [("opened",), ("matched",)]


def test_a_dry_run_shows_the_decisions_and_writes_nothing(committed: Engine, tmp_path):
    land_statement(tmp_path, BANK, "2026-11-04.csv", STATEMENT)
    run(committed, tmp_path)  # loads the statement and decides once
    land_statement(tmp_path, BANK, "2026-11-05.csv", b"Date,Amount,Ref\n2026-11-04,7.00,R3\n")
    tables = ("ledger_recon_runs", "ledger_recon_breaks", "ledger_statement_files")
    counts = {t: rows(committed, f"SELECT count(*) FROM {t}") for t in tables}

    report = run(committed, tmp_path, dry_run=True)

    assert report.files == () and report.sources[0].record is None
    assert len(report.sources[0].outcome.breaks) == 3  # the new file is not loaded by a dry run
    assert {t: rows(committed, f"SELECT count(*) FROM {t}") for t in tables} == counts


def test_a_run_that_dies_before_its_commit_leaves_nothing_and_its_rerun_decides_the_same(
    committed: Engine, tmp_path, monkeypatch
):
    land_statement(tmp_path, BANK, "2026-11-04.csv", STATEMENT)

    def die(cursor, scope) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(reconciliation, "_check_settled", die)
        with pytest.raises(KeyboardInterrupt):
            run(committed, tmp_path)
    assert rows(committed, "SELECT count(*) FROM ledger_recon_matches") == [(0,)]
    assert rows(committed, "SELECT count(*) FROM ledger_recon_breaks") == [(0,)]

    (part,) = run(committed, tmp_path).sources

    assert part.record is not None and (part.record.matches, part.record.breaks_opened) == (1, 3)
    assert rows(committed, "SELECT count(*) FROM ledger_recon_matched_entries") == [(1,)]


def test_a_file_the_store_cannot_take_is_rejected_with_its_reason_and_the_run_goes_on(
    committed: Engine, tmp_path
):
    # A NUL character is text to the CSV reader, and PostgreSQL cannot store it in a text
    # column: the parser accepts the file, the store refuses it.
    provider = csv_source("provider", "bob", rules=(RULE,))
    sources = Sources({"bank": BANK, "provider": provider}, digest="r" * 64)
    land_statement(tmp_path, BANK, "2026-11-04.csv", b"Date,Amount,Ref\n2026-11-02,100.00,R\x001\n")
    land_statement(tmp_path, provider, "2026-11-02.csv", b"Date,Amount,Ref\n2026-11-02,9.00,R1\n")

    report = reconcile(committed, sources, tmp_path, match, who="pytest")

    outcomes = {f.source: f for f in report.files}
    assert (outcomes["bank"].outcome, outcomes["provider"].outcome) == (REJECTED, "loaded")
    assert (
        "NUL" in outcomes["bank"].reason and "nothing of it was loaded" in outcomes["bank"].reason
    )
    [(position, reason, detail, raw)] = rows(
        committed, "SELECT position, reason, detail, raw_input FROM ledger_statement_rejections"
    )
    assert (position, reason, detail) == (0, "unloadable", outcomes["bank"].reason)
    assert bytes(raw) == (tmp_path / BANK.folder / "2026-11-04.csv").read_bytes()
    assert [(landing.file_name, landing.outcome) for landing in landings(committed, "bank", 5)] == [
        ("2026-11-04.csv", REJECTED)
    ]
    # The other source reconciled in the same run; the bank's run considered its ledger side.
    parts = {part.source: part for part in report.sources}
    assert [m.ledger_ids for m in parts["provider"].outcome.matches] == [((0, 3, 0),)]
    assert len(parts["bank"].scope.statement_items) == 0
    assert all(part.record is not None for part in report.sources)

    # The next run passes over the rejected file and decides as before.
    again = reconcile(committed, sources, tmp_path, match, who="pytest")
    assert again.files == ()
    assert all(part.record is not None for part in again.sources)


def test_the_task_log_gives_each_break_its_amount_as_money(committed: Engine, tmp_path):
    land_statement(tmp_path, BANK, "2026-11-04.csv", STATEMENT)
    report = run(committed, tmp_path)
    ids = dict(rows(committed, "SELECT reason, break_id FROM ledger_recon_breaks"))

    lines = breaks_changed(committed, {"bank": Unit("EUR", 2)}, report)

    # One-sided breaks show the amount of their one side, a mismatch both and how far apart.
    assert lines == [
        f"source bank: opened break {ids[AMOUNT_MISMATCH]}: amount mismatch, account alice,"
        " 0.10 EUR apart (statement 50.10 EUR, ledger 50.00 EUR)",
        f"source bank: opened break {ids[MISSING_IN_LEDGER]}: missing in the ledger,"
        " account alice, 12.00 EUR on the statement",
        f"source bank: opened break {ids[MISSING_IN_STATEMENT]}: missing in the statement,"
        " account alice, 7.00 EUR in the ledger",
    ]
