"""Breaks worked to closure: a run records the rules it matched by; a person matches breaks
by hand, or writes one off, which posts an adjusting event through the ledger that a later
run settles once it is committed; every change of a break is in its history with who and
why; what may not be done is refused, saying why, and changes nothing."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from ledger_engine.core.money import Unit
from ledger_engine.errors import ResolutionRefused
from ledger_engine.reconcile.matching import (
    AMOUNT_MISMATCH,
    DUPLICATE,
    MISSING_IN_LEDGER,
    MISSING_IN_STATEMENT,
)
from ledger_engine.reconcile.matching.reference import match
from ledger_engine.reconcile.resolve import manual_match, write_off
from ledger_engine.reconcile.rules import AmountCriterion, Rule
from ledger_engine.reconcile.run import reconcile
from ledger_engine.reconcile.sources import Sources, WriteOffStream
from ledger_engine.reconcile.statement_inbox import land_statement
from ledger_engine.reconcile.storage.resolutions import break_history
from ledger_engine.report.provenance import Provenance
from ledger_engine.report.reconciliation import write_reconciliation_page
from ledger_engine.store.migrations import migrate
from tests.support.bank import deposit, transfer
from tests.support.database import rows
from tests.support.events import event_file
from tests.support.html_page import read_page
from tests.support.reconcile import csv_source

RULE = Rule(
    "same reference",
    0,
    amount=AmountCriterion(5, 0.001),
    window_days=1,
    reference_similarity=1.0,
)
ADJUSTMENTS = WriteOffStream("adjustments", "account_id", "amount", "reference", "description")
BANK = csv_source("bank", "alice", rules=(RULE,), write_off=ADJUSTMENTS)
SOURCES = Sources({"bank": BANK}, digest="w" * 64)
MOVEMENTS = [
    deposit("d1", "alice", 10_000, reference="R1", value_date="2026-11-02"),
    deposit("d2", "alice", 5_000, reference="R2", value_date="2026-11-03"),
    deposit("d3", "alice", 700, reference="R3", value_date="2026-11-03"),
]
# R1 matches; R2 is 10 cents off, beyond the rule's tolerance; R9 is unknown to the ledger; d3
# is not on the statement; the second R1 line repeats the first.
STATEMENT = (
    b"Date,Amount,Ref\n"
    b"2026-11-02,100.00,R1\n2026-11-03,50.10,R2\n2026-11-04,12.00,R9\n2026-11-02,100.00,R1\n"
)
WHO, NOTE = "ana@finance", "bank fee, confirmed by phone"


@pytest.fixture
def reconciled(engine: Engine, commit_files, tmp_path) -> Engine:
    """The movements committed and the statement reconciled once: four open breaks."""
    commit_files(engine, 0, [("b0.jsonl", event_file(MOVEMENTS))])
    land_statement(tmp_path / "statements", BANK, "2026-11-04.csv", STATEMENT)
    run(engine, tmp_path)
    return engine


def run(engine: Engine, tmp_path: Path, sources: Sources = SOURCES):
    (part,) = reconcile(engine, sources, tmp_path / "statements", match, who="run").sources
    return part


def break_of(engine: Engine, reason: str) -> int:
    [(break_id,)] = rows(
        engine, "SELECT break_id FROM ledger_recon_breaks WHERE reason = :r", r=reason
    )
    return break_id


def open_reasons(engine: Engine) -> list[str]:
    return [r for (r,) in rows(engine, "SELECT reason FROM open_breaks ORDER BY reason")]


def commit_landed(engine: Engine, commit_files, inbox: Path, batch_id: int) -> list[dict]:
    """Commit every event file landed in `inbox` as batch `batch_id`; the events' lines."""
    files = sorted(inbox.glob("*.jsonl"))
    commit_files(engine, batch_id, [(f.name, f.read_bytes()) for f in files])
    return [json.loads(line) for f in files for line in f.read_text().splitlines()]


def balance(engine: Engine, account: str) -> int:
    [(value,)] = rows(engine, "SELECT value FROM accounts WHERE key = :k", k=account)
    return value


def test_a_run_records_the_rules_it_matched_by(reconciled: Engine):
    assert rows(
        reconciled,
        "SELECT priority, rule, strategy, amount_tolerance, amount_relative, window_days"
        " FROM ledger_recon_run_rules",
    ) == [(0, "same reference", "one_to_one", 5, 0.001, 1)]


# -- manual matches ----------------------------------------------------------------------------


def test_a_manual_match_resolves_the_breaks_it_pairs_with_who_and_why(reconciled, tmp_path):
    unknown, unbooked = (
        break_of(reconciled, MISSING_IN_LEDGER),
        break_of(reconciled, MISSING_IN_STATEMENT),
    )

    match_id = manual_match(reconciled, [unknown, unbooked], who=WHO, note=NOTE)

    assert rows(
        reconciled,
        "SELECT kind, rule, run_id, account, amount_difference, date_difference_days, who, note"
        " FROM ledger_recon_matches WHERE match_id = :m",
        m=match_id,
    ) == [("manual", None, None, "alice", 1_200 - 700, 1, WHO, NOTE)]
    assert open_reasons(reconciled) == [AMOUNT_MISMATCH, DUPLICATE]
    for break_id in (unknown, unbooked):
        steps = break_history(reconciled, break_id)
        assert [(s.action, s.who, s.note, s.match_id) for s in steps] == [
            ("opened", "run", None, None),
            ("manual_match", WHO, NOTE, match_id),
        ]
    # The next run considers neither item again, and changes nothing.
    part = run(reconciled, tmp_path)
    assert (len(part.scope.statement_items), len(part.scope.ledger_items)) == (2, 1)
    assert open_reasons(reconciled) == [AMOUNT_MISMATCH, DUPLICATE]


def test_a_manual_match_that_cannot_hold_is_refused_and_changes_nothing(reconciled: Engine):
    unknown, unbooked, duplicate = (
        break_of(reconciled, r) for r in (MISSING_IN_LEDGER, MISSING_IN_STATEMENT, DUPLICATE)
    )
    refused = [
        ([unknown], NOTE, "at least one statement entry and one ledger movement"),
        ([unknown, duplicate], NOTE, "one ledger movement"),
        ([unknown, unbooked], "  ", "say why, with a note"),
        ([], NOTE, "name at least one break"),
        ([999], NOTE, "no break 999"),
    ]
    before = rows(reconciled, "SELECT * FROM ledger_recon_breaks ORDER BY break_id")

    for break_ids, note, refusal in refused:
        with pytest.raises(ResolutionRefused, match=refusal):
            manual_match(reconciled, break_ids, who=WHO, note=note)

    assert rows(reconciled, "SELECT * FROM ledger_recon_breaks ORDER BY break_id") == before
    assert rows(reconciled, "SELECT count(*) FROM ledger_recon_matches WHERE kind = 'manual'") == [
        (0,)
    ]
    manual_match(reconciled, [unknown, unbooked], who=WHO, note=NOTE)
    with pytest.raises(ResolutionRefused, match=f"break {unknown}, {unbooked} is not open"):
        manual_match(reconciled, [unknown, unbooked], who=WHO, note=NOTE)


# -- write-offs ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "adjustment"),
    [(MISSING_IN_LEDGER, 1_200), (MISSING_IN_STATEMENT, -700), (AMOUNT_MISMATCH, 10)],
)
def test_a_write_off_posts_an_adjusting_event_that_the_next_run_settles(
    reconciled: Engine, commit_files, tmp_path, reason, adjustment
):
    inbox, break_id = tmp_path / "inbox", break_of(reconciled, reason)

    posting = write_off(reconciled, SOURCES, inbox, break_id, who=WHO, note=NOTE)

    # Posted: the event is landed, the break stays open until its adjustment is committed.
    assert (posting.amount, posting.again) == (adjustment, False)
    assert open_reasons(reconciled).count(reason) == 1
    assert [s.action for s in break_history(reconciled, break_id)] == [
        "opened",
        "write_off_posted",
    ]
    again = write_off(reconciled, SOURCES, inbox, break_id, who=WHO, note="same, again")
    assert (again.request_id, again.again) == (posting.request_id, True)
    landed = commit_landed(reconciled, commit_files, inbox, 1)
    assert landed == [
        {
            "stream": "adjustments",
            "request_id": posting.request_id,
            "payload": {
                "account_id": "alice",
                "amount": adjustment,
                "reference": posting.request_id,
                "description": f"write-off: {NOTE}",
            },
        }
    ]
    assert balance(reconciled, "alice") == 15_700 + adjustment

    part = run(reconciled, tmp_path)

    assert part.record is not None and part.record.written_off == 1
    assert reason not in open_reasons(reconciled)
    [(kind, difference, who, note)] = rows(
        reconciled,
        "SELECT kind, amount_difference, who, note FROM ledger_recon_matches WHERE kind <> 'rule'",
    )
    assert (kind, difference, who, note) == ("write_off", 0, WHO, NOTE)
    steps = break_history(reconciled, break_id)
    assert [(s.action, s.request_id) for s in steps] == [
        ("opened", None),
        ("write_off_posted", posting.request_id),
        ("written_off", posting.request_id),
    ]
    # Settled for good: the adjustment is matched, not a new break, and a rerun adds nothing.
    assert run(reconciled, tmp_path).record.breaks_opened == 0


def test_settled_write_offs_count_as_closed_breaks_in_the_run_its_page_and_the_index(
    reconciled: Engine, commit_files, tmp_path
):
    inbox = tmp_path / "inbox"
    for reason in (MISSING_IN_LEDGER, MISSING_IN_STATEMENT):
        write_off(reconciled, SOURCES, inbox, break_of(reconciled, reason), who=WHO, note=NOTE)
    commit_landed(reconciled, commit_files, inbox, 1)

    part = run(reconciled, tmp_path)

    assert part.record is not None and part.record.written_off == 2
    [(closed,)] = rows(
        reconciled,
        "SELECT breaks_closed FROM ledger_recon_runs WHERE run_id = :id",
        id=part.record.run_id,
    )
    settled = rows(
        reconciled,
        "SELECT count(*) FROM ledger_recon_break_history WHERE action = 'written_off'"
        " AND run_id = :id",
        id=part.record.run_id,
    )
    assert (closed, settled) == (2, [(2,)])
    written_by = Provenance.from_command("ledger reconcile", host="host", user="pytest")
    page = read_page(
        write_reconciliation_page(
            tmp_path / "reports",
            reconciled,
            [part.record.run_id],
            written_by=written_by,
            money={"bank": Unit("EUR", 2)},
        )
    )
    assert "breaks closed 2 of which 2 written off" in page.text
    [shown] = page.body_rows("runs")
    assert shown[-1] == "2 (2 written off)"
    index = read_page(tmp_path / "reports" / "index.html")
    assert index.body_rows("reconciliations")[0][6] == "2 (2 written off)"

    # A run recorded before the count was right (it left its write-offs out) is made right by
    # its migration, from the breaks' history.
    with reconciled.begin() as conn:
        conn.execute(
            text("UPDATE ledger_recon_runs SET breaks_closed = 0 WHERE run_id = :id"),
            {"id": part.record.run_id},
        )
        conn.execute(text("DELETE FROM ledger_schema_migrations WHERE version = '0027'"))
    assert migrate(reconciled) == ["0027"]
    assert rows(
        reconciled,
        "SELECT run_id, breaks_closed FROM ledger_recon_runs ORDER BY run_id",
    ) == [(part.record.run_id - 1, 0), (part.record.run_id, 2)]


def test_a_rejected_adjustment_leaves_the_break_open_and_a_new_write_off_posts_anew(
    reconciled: Engine, commit_files, tmp_path
):
    inbox, unbooked = tmp_path / "inbox", break_of(reconciled, MISSING_IN_STATEMENT)
    # alice moves all but 200 away: reversing d3's 700 would take her below zero.
    commit_files(
        reconciled, 1, [("b1.jsonl", event_file([transfer("t1", "alice", "bob", 15_500)]))]
    )
    first = write_off(reconciled, SOURCES, inbox, unbooked, who=WHO, note=NOTE)
    commit_landed(reconciled, commit_files, inbox, 2)
    assert rows(
        reconciled, "SELECT reason FROM ledger_rejections WHERE request_id = :r", r=first.request_id
    ) == [("aborted",)]

    run(reconciled, tmp_path)

    assert MISSING_IN_STATEMENT in open_reasons(reconciled)
    second = write_off(reconciled, SOURCES, tmp_path / "inbox2", unbooked, who=WHO, note=NOTE)
    assert second.request_id != first.request_id and not second.again


def test_an_applied_write_off_waits_for_its_run_and_refuses_other_resolutions(
    reconciled: Engine, commit_files, tmp_path
):
    inbox, unknown = tmp_path / "inbox", break_of(reconciled, MISSING_IN_LEDGER)
    write_off(reconciled, SOURCES, inbox, unknown, who=WHO, note=NOTE)
    pair = [unknown, break_of(reconciled, MISSING_IN_STATEMENT)]

    with pytest.raises(ResolutionRefused, match="is written off"):
        manual_match(reconciled, pair, who=WHO, note=NOTE)
    commit_landed(reconciled, commit_files, inbox, 1)
    with pytest.raises(ResolutionRefused, match="applied; the next reconciliation run"):
        write_off(reconciled, SOURCES, inbox, unknown, who=WHO, note=NOTE)


def test_writing_off_a_duplicate_posts_nothing_and_resolves_it_at_once(reconciled, tmp_path):
    inbox, duplicate = tmp_path / "inbox", break_of(reconciled, DUPLICATE)

    posting = write_off(reconciled, SOURCES, inbox, duplicate, who=WHO, note="listed twice")

    assert (posting.amount, posting.request_id) == (0, None)
    assert not inbox.exists() or not list(inbox.iterdir())
    assert DUPLICATE not in open_reasons(reconciled)
    assert [(s.action, s.note) for s in break_history(reconciled, duplicate)] == [
        ("opened", None),
        ("written_off", "listed twice"),
    ]


def test_a_source_without_a_write_off_stream_refuses_and_records_nothing(reconciled, tmp_path):
    undeclared = Sources({"bank": replace(BANK, write_off=None)}, digest=SOURCES.digest)
    unknown = break_of(reconciled, MISSING_IN_LEDGER)

    with pytest.raises(ResolutionRefused, match="declares no \\[write_off\\] stream"):
        write_off(reconciled, undeclared, tmp_path / "inbox", unknown, who=WHO, note=NOTE)

    assert [s.action for s in break_history(reconciled, unknown)] == ["opened"]
