"""The reconciliation's rules in the whole-ledger suite, on a real PostgreSQL: they pass on a
ledger never reconciled and on what real reconciliation runs recorded, and each fails, naming
the item or match, when the reconciliation's tables are changed behind the runs' back.

The ledger (built once per module; each test works on a copy):
- batch 0: alice's two deposits, bob's payout in two parts, an unexplained deposit of bob's,
  and a deposit of carol's, whom no statement names (so no run considers it);
- the bank's statement: alice's first deposit exactly, and again (a duplicate), her second
  30 cents off and a day late, bob's payout as one entry, and a credit of 12.00 the ledger
  lacks; run 1 matches by the three rules and leaves the rest as breaks;
- batch 1 books that credit and another deposit of bob's; run 2 matches the credit (closing
  its break) and leaves bob's deposit missing in the statement;
- the duplicate is written off (nothing to adjust: resolved at once) and so is bob's deposit
  (an adjusting event of -40), which batch 2 commits and run 3 settles as a write-off match.
Runs match with the reference matcher (no Spark; the pipeline's commits use the shared one).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import Engine

from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.audit.expectations.rules import RECONCILIATION
from ledger_engine.audit.expectations.run import run_expectations, run_suite
from ledger_engine.audit.expectations.suites import (
    RUN_PAGE,
    SuiteSpec,
    reconciliation_expectations,
)
from ledger_engine.audit.findings import AuditReport, CheckResult
from ledger_engine.reconcile.matching import DUPLICATE
from ledger_engine.reconcile.matching.reference import match
from ledger_engine.reconcile.resolve import write_off
from ledger_engine.reconcile.rules import ONE_TO_MANY
from ledger_engine.reconcile.run import reconcile
from ledger_engine.reconcile.sources import CsvLayout, Source, Sources, WriteOffStream
from ledger_engine.reconcile.statement_inbox import land_statement
from ledger_engine.report import write_report
from ledger_engine.store.database import connect
from tests.support.bank import deposit
from tests.support.database import rows
from tests.support.events import event_file
from tests.support.expectations import RECONCILED_CHECKS, tamper
from tests.support.html_page import Page
from tests.support.reconcile import rule

LEDGER = build_ledger()
ENTRIES, CHANGES, MATCHED_ONCE, TOLERANCES = RECONCILED_CHECKS

EXACT = rule("same reference and day", 0, reference=1.0, window_days=0)
NEAR = rule("same reference, near amount", 1, reference=1.0, tolerance=50, window_days=3)
PAYOUT = rule("payout", 2, strategy=ONE_TO_MANY, group_by="reference", reference=1.0, window_days=3)
BANK = Source(
    "bank",
    "csv",
    "accounts",
    "EUR",
    2,
    csv=CsvLayout(
        {"booking_date": "Date", "amount": "Amount", "reference": "Ref", "account": "Account"}
    ),
    rules=(EXACT, NEAR, PAYOUT),
    write_off=WriteOffStream("adjustments", reference_field="reference"),
)
SOURCES = Sources({"bank": BANK}, digest="r" * 64)
BATCH_0 = [
    deposit("d1", "alice", 10_000, reference="R1", value_date="2026-11-02"),
    deposit("d2", "alice", 5_000, reference="R2", value_date="2026-11-03"),
    deposit("p1", "bob", 300, reference="P1", value_date="2026-11-02"),
    deposit("p2", "bob", 200, reference="P1", value_date="2026-11-02"),
    deposit("d5", "bob", 700, reference="R5", value_date="2026-11-02"),
    deposit("d6", "carol", 900, reference="R6", value_date="2026-11-02"),
]
STATEMENT = (
    b"Date,Amount,Ref,Account\n"
    b"2026-11-02,100.00,R1,alice\n"
    b"2026-11-02,100.00,R1,alice\n"
    b"2026-11-04,50.30,R2,alice\n"
    b"2026-11-02,5.00,P1,bob\n"
    b"2026-11-05,12.00,R9,alice\n"
)
BATCH_1 = [
    deposit("d9", "alice", 1_200, reference="R9", value_date="2026-11-05"),
    deposit("d8", "bob", 40, reference="R8", value_date="2026-11-05"),
]


def write_off_breaks(engine: Engine, events_inbox: Path) -> None:
    """Write off the open duplicate and the break of bob's deposit d8, landing the adjusting
    events in `events_inbox`."""
    for (break_id,) in rows(
        engine,
        "SELECT break_id FROM open_breaks WHERE reason = :duplicate OR request_id = 'd8'",
        duplicate=DUPLICATE,
    ):
        write_off(engine, SOURCES, events_inbox, break_id, who="pytest", note="agreed")


@pytest.fixture(scope="module")
def reconciled_url(
    module_database_url: str, commit_files, tmp_path_factory: pytest.TempPathFactory
) -> str:
    """The module's ledger (see the module doc), reconciled three times."""
    statements = tmp_path_factory.mktemp("statements")
    events = tmp_path_factory.mktemp("events")
    engine = connect(module_database_url)
    try:
        commit_files(engine, 0, [("b0.jsonl", event_file(BATCH_0))])
        land_statement(statements, BANK, "2026-11-05.csv", STATEMENT)
        reconcile(engine, SOURCES, statements, match, who="pytest")
        commit_files(engine, 1, [("b1.jsonl", event_file(BATCH_1))])
        reconcile(engine, SOURCES, statements, match, who="pytest")
        write_off_breaks(engine, events)
        adjustments = [(p.name, p.read_bytes()) for p in sorted(events.glob("*.jsonl"))]
        commit_files(engine, 2, adjustments)
        reconcile(engine, SOURCES, statements, match, who="pytest")
    finally:
        engine.dispose()
    return module_database_url


@pytest.fixture
def ledger_url(reconciled_url: str, make_database_url: Callable[..., str]) -> str:
    """A copy of the reconciled ledger, for this test alone."""
    return make_database_url(template=reconciled_url)


RECONCILIATION_ONLY = SuiteSpec(
    "reconciliation_only",
    "no_rows",
    "SELECT 1 AS one",
    "no_rows_batch",
    "reconciliation_only_on_no_rows",
    "reconciliation_only",
    {"result_format": "COMPLETE"},
    lambda: reconciliation_expectations(LEDGER),
    data_docs=RUN_PAGE,
)


def reconciliation_audit(url: str, project_root: Path) -> dict[str, CheckResult]:
    """The reconciliation's rules alone, run as the whole-ledger suite runs them."""
    results = run_suite(RECONCILIATION_ONLY, url, project_root)
    assert [r.name for r in results] == RECONCILED_CHECKS
    return {r.name: r for r in results}


def failures(results: dict[str, CheckResult]) -> dict[str, tuple[str, ...]]:
    return {name: r.findings for name, r in results.items() if not r.passed}


# --- Passing -------------------------------------------------------------------------------


def test_the_whole_ledger_suite_passes_on_real_runs_and_reports_them_as_reconciliation(
    ledger_url: str, project_root: Path, engine_on: Callable[[str], Engine], tmp_path: Path
):
    engine = engine_on(ledger_url)
    assert rows(
        engine, "SELECT kind, count(*) FROM ledger_recon_matches GROUP BY 1 ORDER BY 1"
    ) == [
        ("rule", 4),
        ("write_off", 1),
    ]
    assert rows(
        engine, "SELECT reason, status, resolution FROM ledger_recon_breaks ORDER BY 1, 2"
    ) == [
        ("duplicate", "resolved", "written_off"),
        ("missing_in_ledger", "resolved", "matched"),
        ("missing_in_statement", "open", None),
        ("missing_in_statement", "resolved", "written_off"),
    ]

    results = run_expectations(ledger_url, LEDGER, project_root)

    assert [(r.name, r.suite) for r in results if r.suite == RECONCILIATION] == [
        (name, RECONCILIATION) for name in RECONCILED_CHECKS
    ]
    assert [(r.name, r.findings) for r in results if not r.passed] == []
    page = Page(write_report(engine, AuditReport(results), tmp_path).read_text(encoding="utf-8"))
    tiles = {
        t.attrs["data-suite"]: t.attrs["class"]
        for t in page.find("div", inside="suites")
        if "data-suite" in t.attrs
    }
    assert tiles[RECONCILIATION] == "tile pass"
    assert "Reconciliation" in page.text
    assert all(name in page.text for name in RECONCILED_CHECKS)


def test_the_rules_pass_on_a_ledger_never_reconciled(database_url: str, project_root: Path):
    assert failures(reconciliation_audit(database_url, project_root)) == {}


# --- Each rule names what was changed behind the runs' back -------------------------------


@dataclass(frozen=True)
class Tamper:
    """A change to the reconciliation's tables, and the rule that must name it."""

    statements: tuple[str, ...]
    check: str
    finding: tuple[str, ...]  # one finding of the check holds all of these


_ENTRY = "SELECT file_id, position FROM ledger_statement_entries WHERE reference = '{}' LIMIT 1"
_MATCH = "(SELECT match_id FROM ledger_recon_matches WHERE rule = '{}' LIMIT 1)"
CASES = {
    "a matched entry's row deleted": Tamper(
        (
            "DELETE FROM ledger_recon_matched_entries"
            f" WHERE (file_id, position) = ({_ENTRY.format('R2')})",
        ),
        ENTRIES,
        ("file_id=1, position=4", "held_by='nothing'", "neither matched nor in an open break"),
    ),
    "a second, open break for a matched entry": Tamper(
        (
            "INSERT INTO ledger_recon_breaks (source, reason, account, file_id, position,"
            " opened_run_id) SELECT 'bank', 'missing_in_ledger', 'alice', file_id, position, 1"
            f" FROM ({_ENTRY.format('R2')}) AS e",
        ),
        ENTRIES,
        ("position=4", "held_by='match 2, open break 5'", "more than one match or open break"),
    ),
    "an open break of a considered change deleted": Tamper(
        (
            "DELETE FROM ledger_recon_break_history WHERE break_id IN (SELECT break_id"
            " FROM ledger_recon_breaks WHERE status = 'open')",
            "DELETE FROM ledger_recon_breaks WHERE status = 'open'",
        ),
        CHANGES,
        ("source='bank', batch_id=0, position=4, seq=0", "neither matched nor in an open break"),
    ),
    "an account first reconciled now, its earlier movement left unheld": Tamper(
        (
            "INSERT INTO ledger_recon_accounts (source, table_name, account, run_id)"
            " VALUES ('bank', 'accounts', 'carol', 3)",
        ),
        CHANGES,
        ("source='bank', batch_id=0, position=5, seq=0", "neither matched nor in an open break"),
    ),
    "a matched change filed again under another source, into a second match": Tamper(
        (
            "INSERT INTO ledger_recon_matched_changes (source, batch_id, position, seq,"
            f" match_id) VALUES ('elsewhere', 0, 0, 0, {_MATCH.format('payout')})",
        ),
        MATCHED_ONCE,
        ("ledger change (batch 0, position 0, seq 0)", "match 1, match 3", "2 matches of one"),
    ),
    "an entry put into a second match": Tamper(
        (
            "ALTER TABLE ledger_recon_matched_entries"
            " DROP CONSTRAINT ledger_recon_matched_entries_pkey",
            "INSERT INTO ledger_recon_matched_entries (file_id, position, match_id)"
            f" SELECT file_id, position, 3 FROM ({_ENTRY.format('R1')}) AS e",
        ),
        MATCHED_ONCE,
        ("statement entry (file 1, position 2)", "match 1, match 3", "in 2 matches"),
    ),
    "a match's amount difference beyond its rule's tolerance": Tamper(
        (
            "UPDATE ledger_recon_matches SET amount_difference = 51"
            " WHERE rule = 'same reference, near amount'",
        ),
        TOLERANCES,
        ("match_id=2", "amount_difference 51 beyond the 50 its rule allows"),
    ),
    "a match's date difference beyond its rule's window": Tamper(
        (
            "UPDATE ledger_recon_matches SET date_difference_days = 4"
            " WHERE rule = 'same reference, near amount'",
        ),
        TOLERANCES,
        ("match_id=2", "date_difference_days 4 beyond its rule's window of 3 days"),
    ),
    "a match whose recorded difference is not its items'": Tamper(
        ("UPDATE ledger_recon_matches SET amount_difference = 0 WHERE match_id = 2",),
        TOLERANCES,
        ("match_id=2", "amount_difference 0 recorded, its items differ by 30"),
    ),
    "a rule its run did not record": Tamper(
        ("DELETE FROM ledger_recon_run_rules WHERE run_id = 1 AND rule = 'payout'",),
        TOLERANCES,
        ("match_id=3", "rule='payout'", "its run (1) recorded no rule of that name"),
    ),
    "a write-off that does not net to 0": Tamper(
        (
            "DELETE FROM ledger_recon_matched_changes WHERE batch_id = 2 AND match_id IN"
            " (SELECT match_id FROM ledger_recon_matches WHERE kind = 'write_off')",
        ),
        TOLERANCES,
        ("kind='write_off'", "a write-off whose items net to -40 (statement 0, ledger 40)"),
    ),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_each_change_is_named_by_its_rule(case: str, ledger_url: str, project_root: Path) -> None:
    broken = CASES[case]
    tamper(ledger_url, *broken.statements)

    found = failures(reconciliation_audit(ledger_url, project_root))

    assert broken.check in found, found
    assert any(all(part in f for part in broken.finding) for f in found[broken.check]), found
