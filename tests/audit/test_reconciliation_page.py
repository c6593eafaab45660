"""The reconciliation page: what a person reads after `ledger reconcile` or the DAG.

A real reconciliation is recorded once for the module (movements committed through the
pipeline, a camt.053 bank statement and a provider's CSV landed, matched by the plain Python
reference matcher, kept in PostgreSQL), with a break of every reason, three of them backdated
to fill the age buckets. Its page is checked as written (every figure is the database's: the
runs, the match rate of each side, the breaks by reason and by age, the oldest open breaks in
order, each account's drift; labels from data shown as text) and as headless Chromium shows
it (charts drawn, nothing on the console, no request made; a screenshot is kept in
`test-artifacts/reconciliation-page/`); the index lists it beside the audit runs.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from ledger_engine.audit.findings import AuditReport, CheckResult
from ledger_engine.config import PROJECT_ROOT
from ledger_engine.core.money import Unit
from ledger_engine.reconcile.matching.reference import match
from ledger_engine.reconcile.resolve import write_off
from ledger_engine.reconcile.rules import AmountCriterion, Rule
from ledger_engine.reconcile.run import reconcile
from ledger_engine.reconcile.sources import Source, Sources, WriteOffStream
from ledger_engine.reconcile.statement_inbox import land_statement
from ledger_engine.report import render_index, write_report
from ledger_engine.report.formats import amount_text
from ledger_engine.report.provenance import Provenance
from ledger_engine.report.reconciliation import write_reconciliation_page
from ledger_engine.report.reconciliation_context import DriftView
from ledger_engine.report.reconciliation_queries import DriftRow, UnknownRuns
from ledger_engine.store.database import connect
from tests.support.bank import deposit
from tests.support.browser import charts_drawn, png_facts, render
from tests.support.database import rows
from tests.support.events import event_file
from tests.support.html_page import Page, read_page
from tests.support.reconcile import csv_source
from tests.support.statements import Entry, Statement, camt053_document

ARTIFACTS = PROJECT_ROOT / "test-artifacts" / "reconciliation-page"
HOSTILE = "<img src=x onerror=alert(1)>"  # the provider's name: names are labels
HOSTILE_REFERENCE = "<script>alert('x')</script>"
WRITTEN_BY = Provenance.from_command("ledger reconcile", host="<b>host</b>", user="pytest")
ORIGIN = "ledger reconcile (pytest@<b>host</b>)"  # as the page and the index say who wrote it

# --- The reconciliation: a bank and a provider, a break of every reason --------------------

RULE = Rule("same reference", 0, amount=AmountCriterion(0), window_days=3, reference_similarity=1.0)
IBAN_ALICE, IBAN_BOB = "DE89370400440532013000", "DE02120300000000202051"
BANK = Source(
    "Main bank",
    "camt053",
    "accounts",
    "EUR",
    2,
    accounts={IBAN_ALICE: "alice", IBAN_BOB: "bob"},
    rules=(RULE,),
    write_off=WriteOffStream("adjustments"),
)
PROVIDER = csv_source(HOSTILE, "carol", rules=(RULE,))
SOURCES = Sources({source.name: source for source in (BANK, PROVIDER)}, digest="r" * 64)
MONEY = {BANK.name: Unit("EUR", 2)}  # the provider's unit is not given: its amounts read as units

MOVEMENTS = [
    deposit("d1", "alice", 10_000, reference="R1", value_date="2026-11-02"),
    deposit("d2", "alice", 5_000, reference="R2", value_date="2026-11-02"),
    deposit("d3", "alice", 700, reference="R3", value_date="2026-11-02"),  # not on the statement
    deposit("d4", "bob", 2_500, reference="R4", value_date="2026-11-02"),
    deposit("d5", "carol", 300, reference="C1", value_date="2026-11-02"),
    deposit("d6", "carol", 400, reference="C2", value_date="2026-11-02"),  # not on the statement
]
# Balances stated as of a moment after the commits: the ledger's balance then is its balance
# now (alice 157.00, bob 25.00). Alice's statement says 162.10: a drift of 5.10. Bob's closes
# on a day, as most statements do: its balance holds at that day's end, the same moment.
AFTER_THE_COMMITS = datetime(2100, 1, 1, tzinfo=UTC)
THE_DAY_BEFORE = date(2099, 12, 31)
BANK_STATEMENT = camt053_document(
    [
        Statement(
            IBAN_ALICE,
            entries=[
                Entry(10_000, reference="R1"),  # matched
                Entry(10_000, reference="R1"),  # duplicate
                Entry(5_010, reference="R2"),  # amount_mismatch (ledger 5_000)
                Entry(1_200, reference="R9"),  # missing_in_ledger
            ],
            closing=16_210,
            closing_date=AFTER_THE_COMMITS,
            statement_id="STMT-ALICE",
        ),
        Statement(
            IBAN_BOB,
            entries=[Entry(2_500, reference="R4")],
            closing=2_500,
            closing_date=THE_DAY_BEFORE,
            statement_id="STMT-BOB",
        ),
    ]
)
PROVIDER_STATEMENT = (
    f"Date,Amount,Ref\n2026-11-02,3.00,C1\n2026-11-02,9.99,{HOSTILE_REFERENCE}\n".encode()
)
# What a correct run leaves open, by reason; and the side counts (matched, considered).
OPEN_BY_REASON = {
    "missing in the ledger": 2,  # R9, the provider's hostile entry
    "missing in the statement": 2,  # d3, d6
    "amount mismatch": 1,  # R2
    "duplicate": 1,  # R1 again
}
STATEMENT_SIDE, LEDGER_SIDE = (3, 7), (3, 6)
RUN_SIDES = {HOSTILE: [(1, 2), (1, 2)], "Main bank": [(2, 5), (2, 4)]}
# Breaks backdated by days (by their statement reference or request id), one per older bucket.
BACKDATED = {"d3": 40, "R2": 10, "R9": 2}
WRITTEN_OFF = "R9"  # a write-off posted, its adjusting event not committed: the break is open
AGES = [("< 1 day", 3), ("1–7 days", 1), ("7–30 days", 1), ("≥ 30 days", 1)]


@dataclass(frozen=True)
class Recorded:
    engine: Engine
    run_ids: list[int]
    reports: Path
    page: Path


@pytest.fixture(scope="module")
def recorded(
    module_database_url: str, commit_files, tmp_path_factory: pytest.TempPathFactory
) -> Recorded:
    """The module's reconciliation, recorded, and its page written."""
    engine = connect(module_database_url)
    commit_files(engine, 0, [("b0.jsonl", event_file(MOVEMENTS))])
    inbox = tmp_path_factory.mktemp("statements")
    land_statement(inbox, BANK, "2026-11-02.xml", BANK_STATEMENT)
    land_statement(inbox, PROVIDER, "2026-11-02.csv", PROVIDER_STATEMENT)
    report = reconcile(engine, SOURCES, inbox, match, who="pytest")
    run_ids = [part.record.run_id for part in report.sources if part.record is not None]
    with engine.begin() as conn:
        for name, days in BACKDATED.items():
            conn.execute(
                text(
                    "UPDATE ledger_recon_breaks SET opened_at = opened_at - make_interval("
                    "days => :days) WHERE break_id = (SELECT break_id FROM open_breaks"
                    " WHERE :name IN (statement_reference, request_id))"
                ),
                {"name": name, "days": days},
            )
    (break_id,) = rows(
        engine, "SELECT break_id FROM open_breaks WHERE statement_reference = :r", r=WRITTEN_OFF
    )[0]
    events = tmp_path_factory.mktemp("events")
    write_off(engine, SOURCES, events, break_id, who="pytest", note="the bank's fee")
    reports = tmp_path_factory.mktemp("reports")
    page = write_reconciliation_page(reports, engine, run_ids, written_by=WRITTEN_BY, money=MONEY)
    yield Recorded(engine, run_ids, reports, page)
    engine.dispose()


def database_sides(engine: Engine, run_ids: list[int]) -> list[tuple[int, int]]:
    """(matched, considered) of the statement side and of the ledger side, counted here."""
    considered = rows(
        engine,
        "SELECT sum(statement_items), sum(ledger_items) FROM ledger_recon_runs"
        " WHERE run_id = ANY(:ids)",
        ids=run_ids,
    )[0]
    matched = [
        rows(
            engine,
            f"SELECT count(*) FROM {table} JOIN ledger_recon_matches USING (match_id)"
            " WHERE run_id = ANY(:ids)",
            ids=run_ids,
        )[0][0]
        for table in ("ledger_recon_matched_entries", "ledger_recon_matched_changes")
    ]
    return list(zip(matched, considered, strict=True))


# --- The page as written -------------------------------------------------------------------


def test_the_page_names_each_run_its_source_who_and_what_it_considered(recorded: Recorded):
    page = read_page(recorded.page)

    runs = rows(
        recorded.engine,
        "SELECT run_id, source, who FROM ledger_recon_runs WHERE run_id = ANY(:ids)"
        " ORDER BY source, run_id",
        ids=recorded.run_ids,
    )
    assert len(runs) == 2
    shown = page.body_rows("runs")
    assert [row[:3] for row in shown] == [[str(i), source, who] for i, source, who in runs]
    files = {HOSTILE: "2026-11-02.csv", BANK.name: "2026-11-02.xml"}
    considered = [f"ledger: batch 0 statements: {files[source]}" for _, source, _ in runs]
    assert [row[4] for row in shown] == considered
    for row, (run_id, source, _) in zip(shown, runs, strict=True):
        sides = database_sides(recorded.engine, [run_id])
        assert sides == RUN_SIDES[source]
        assert row[5:9] == [
            *(f"{m} of {n} {100 * m / n:.1f}%" for m, n in sides),  # rates exact to a tenth here
            *map(
                str,
                rows(
                    recorded.engine,
                    "SELECT breaks_opened, breaks_closed FROM ledger_recon_runs WHERE run_id = :id",
                    id=run_id,
                )[0],
            ),
        ]
    assert ORIGIN in page.text


def test_the_match_rate_of_each_side_is_the_items_matched_of_those_considered(
    recorded: Recorded,
):
    page = read_page(recorded.page)

    sides = database_sides(recorded.engine, recorded.run_ids)
    assert sides == [STATEMENT_SIDE, LEDGER_SIDE]
    assert page.body_rows("match-rate-table") == [
        ["statement entries", "3", "4", "7", "42.9%"],  # 42.857...: to the nearest tenth
        ["ledger entries", "3", "3", "6", "50.0%"],
    ]
    tiles = [
        e.attrs["data-side"] for e in page.find("div", inside="figures") if "data-side" in e.attrs
    ]
    assert tiles == ["statement", "ledger"]
    assert "42.9% 3 of 7" in page.text and "50.0% 3 of 6" in page.text
    charted = json.loads(page.json_data)["match_rate"]
    assert [(s["matched"], s["considered"]) for s in charted] == sides


def test_breaks_by_reason_and_by_age_are_the_open_breaks_in_the_database(recorded: Recorded):
    page = read_page(recorded.page)

    by_reason = dict(
        rows(recorded.engine, "SELECT reason, count(*) FROM open_breaks GROUP BY reason")
    )
    opened = dict(
        rows(
            recorded.engine,
            "SELECT reason, count(*) FROM ledger_recon_breaks WHERE opened_run_id = ANY(:ids)"
            " GROUP BY reason",
            ids=recorded.run_ids,
        )
    )
    reasons = {row[0]: row[1:] for row in page.body_rows("reasons-table")}
    assert {title: int(n) for title, (n, _) in reasons.items()} == OPEN_BY_REASON
    assert sorted(int(n) for n, _ in reasons.values()) == sorted(by_reason.values())
    assert sorted(int(n) for _, n in reasons.values()) == sorted(opened.values())
    ages = rows(
        recorded.engine,
        "SELECT count(*) FILTER (WHERE age < interval '1 day'),"
        " count(*) FILTER (WHERE age >= interval '1 day' AND age < interval '7 days'),"
        " count(*) FILTER (WHERE age >= interval '7 days' AND age < interval '30 days'),"
        " count(*) FILTER (WHERE age >= interval '30 days') FROM open_breaks",
    )[0]
    assert page.body_rows("ages-table") == [[label, str(n)] for label, n in AGES]
    assert [n for _, n in AGES] == list(ages)
    data = json.loads(page.json_data)
    assert {r["label"]: r["value"] for r in data["reasons"]} == OPEN_BY_REASON
    assert [(r["label"], r["value"]) for r in data["ages"]] == AGES
    assert "6 breaks open." in page.text


def test_the_oldest_open_breaks_come_first_with_their_amounts(recorded: Recorded, tmp_path: Path):
    page = read_page(recorded.page)

    oldest = rows(
        recorded.engine,
        "SELECT break_id, coalesce(statement_reference, request_id) FROM open_breaks"
        " ORDER BY opened_at, break_id",
    )
    shown = page.body_rows("oldest-breaks")
    assert [(int(row[0]), row[7].split()[0]) for row in shown] == oldest
    assert [name for _, name in oldest[:3]] == list(BACKDATED)  # the oldest first
    amounts = {row[7].split()[0]: row[1:7] for row in shown}
    assert amounts["d3"] == ["Main bank", "missing in the statement", "alice", "—", "7.00 EUR", "—"]
    assert amounts["R2"][3:] == ["50.10 EUR", "50.00 EUR", "0.10 EUR"]
    assert amounts["R9"][3:] == ["12.00 EUR", "—", "—"]
    posted = rows(
        recorded.engine,
        "SELECT write_off_request_id FROM open_breaks WHERE write_off_request_id IS NOT NULL",
    )
    assert [(name, row[7]) for row in shown if (name := row[7].split()[0]) != row[7]] == [
        (WRITTEN_OFF, f"{WRITTEN_OFF} write-off posted: {request}") for (request,) in posted
    ]
    # The provider's unit was not given: its amounts read in minor units, and the page says so.
    assert amounts[HOSTILE_REFERENCE] == [
        HOSTILE,
        "missing in the ledger",
        "carol",
        "999",
        "—",
        "—",
    ]
    assert amounts["d6"][3:] == ["—", "400", "—"]
    assert f"Amounts of {HOSTILE} are in minor units" in page.text

    fewer = read_page(
        write_reconciliation_page(
            tmp_path, recorded.engine, recorded.run_ids, written_by=WRITTEN_BY, oldest=3
        )
    )
    assert [int(row[0]) for row in fewer.body_rows("oldest-breaks")] == [i for i, _ in oldest[:3]]
    assert "The oldest 3 of 6 open breaks" in fewer.text


def test_each_accounts_drift_is_the_databases_and_a_drifting_account_stands_out(
    recorded: Recorded,
):
    page = read_page(recorded.page)

    drift = rows(
        recorded.engine,
        "SELECT account, statement_balance, ledger_balance_then, drift FROM statement_drift"
        " ORDER BY drift = 0, account",
    )
    assert drift == [("alice", 16_210, 15_700, 510), ("bob", 2_500, 2_500, 0)]
    shown = page.body_rows("drift")
    assert [[row[1], *row[3:6]] for row in shown] == [
        ["alice", "162.10 EUR", "157.00 EUR", "5.10 EUR"],
        ["bob", "25.00 EUR", "25.00 EUR", "0.00 EUR"],
    ]
    # Each closing balance dated as the bank dated it: a date-time as it is, a bare day as that
    # day, saying that its balance holds at the day's end.
    assert [row[2] for row in shown] == ["2100-01-01 00:00:00 UTC", "2099-12-31 (end of day)"]
    assert "A closing balance dated by a day holds at the end of that day" in page.text
    assert len(page.find("tr", inside="drift", cls="drifting")) == 1
    assert "1 of 2 accounts drift" in page.text


def test_labels_from_data_are_shown_as_text_never_as_markup(recorded: Recorded):
    markup = recorded.page.read_text(encoding="utf-8")
    page = Page(markup)

    for label in (HOSTILE, HOSTILE_REFERENCE, ORIGIN):
        assert label not in markup
        assert label in page.text
    assert page.find("img") == [] and page.find("b") == []
    assert len(page.find("script")) == 3  # the colour mode's script, the chart data, the charts
    assert HOSTILE not in page.json_data  # the chart data holds counts and fixed labels only


def test_the_index_lists_each_reconciliation_beside_the_audit_runs(
    recorded: Recorded, tmp_path: Path
):
    audit = write_report(
        recorded.engine, AuditReport([CheckResult("merkle", "batch hash chain", True)]), tmp_path
    )
    first = write_reconciliation_page(
        tmp_path, recorded.engine, recorded.run_ids, written_by=WRITTEN_BY
    )
    second = write_reconciliation_page(
        tmp_path, recorded.engine, recorded.run_ids, written_by=WRITTEN_BY, money=MONEY
    )

    index = read_page(tmp_path / "index.html")
    assert [a.attrs["href"] for a in index.find("a", inside="runs")] == [audit.name]
    links = [a.attrs["href"] for a in index.find("a", inside="reconciliations")]
    assert links == [second.name, first.name]  # newest first
    row = index.body_rows("reconciliations")[0]
    assert row[1:] == [f"{HOSTILE}, Main bank", "42.9%", "50.0%", "6", "6", "0", ORIGIN, "—"]
    for page in (first, second):
        assert "index.html" in [a.attrs["href"] for a in read_page(page).find("a")]


def test_a_reconciliation_with_nothing_to_match_reads_sensibly(engine: Engine, tmp_path: Path):
    report = reconcile(engine, SOURCES, tmp_path / "no statements", match, who="pytest")
    run_ids = [part.record.run_id for part in report.sources if part.record is not None]

    path = write_reconciliation_page(tmp_path / "reports", engine, run_ids, written_by=WRITTEN_BY)
    page = read_page(path)

    assert len(page.body_rows("runs")) == 2
    assert "Nothing new to reconcile." in page.text
    assert [row[-1] for row in page.body_rows("match-rate-table")] == ["—", "—"]
    assert "No break is open." in page.text
    assert "has stated a balance yet" in page.text
    rendered = render(path, tmp_path)
    assert rendered.console == [] and rendered.requests == []
    assert charts_drawn(rendered)
    assert rendered.dom.find("rect") == []
    assert "nothing to match" in rendered.dom.text

    nothing = read_page(
        write_reconciliation_page(tmp_path / "reports", engine, [], written_by=WRITTEN_BY)
    )
    assert "Nothing was reconciled." in nothing.text
    with pytest.raises(UnknownRuns, match="999"):
        write_reconciliation_page(
            tmp_path / "reports", engine, [*run_ids, 999], written_by=WRITTEN_BY
        )


# --- Money, and the index from summaries (in memory) --------------------------------------


@pytest.mark.parametrize(
    ("units", "unit", "shown"),
    [
        (-123_456, Unit("EUR", 2), "-1,234.56 EUR"),
        (5, Unit("EUR", 2), "0.05 EUR"),
        (1_500, Unit("JPY", 0), "1,500 JPY"),
        (-7, Unit("BTC", 8), "-0.00000007 BTC"),
        (-123_456, None, "-123,456"),  # the unit not given: minor units
        (None, Unit("EUR", 2), "—"),  # no amount on that side
    ],
)
def test_an_amount_of_minor_units_reads_as_money_of_its_unit(units, unit, shown):
    assert amount_text(units, unit) == shown


@pytest.mark.parametrize(
    ("stated", "shown"),
    [
        ("2026-12-07", "2026-12-07 (end of day)"),
        ("2026-12-07T17:00:00+01:00", "2026-12-07 17:00:00 +01:00"),
        ("2026-12-07T17:00:00.250000-05:30", "2026-12-07 17:00:00.250000 -05:30"),
        ("2026-12-07T23:59:59+00:00", "2026-12-07 23:59:59 UTC"),
    ],
)
def test_a_stated_balance_shows_the_statements_own_date(stated: str, shown: str):
    held_at = datetime(2026, 12, 8, tzinfo=UTC)  # what the page's cell gives as its title
    row = DriftRow("bank", "accounts", "alice", 100, stated, held_at, 100, 0, 100)
    assert DriftView(row, None).stated == shown


def test_the_index_shows_what_a_reconciliations_summary_holds_and_dashes_for_the_rest():
    summary = {
        "origin": HOSTILE,
        "sources": ["Main bank", HOSTILE],
        "statement_matched": 999,
        "statement_items": 1_000,
        "ledger_matched": 0,
        "ledger_items": 0,
        "open_breaks": 1,
        "breaks_opened": 1,
        "breaks_closed": 2,
    }
    pages = [
        (Path("reconciliation-20261102T070809123456Z.html"), summary),
        (Path("reconciliation-20261101T000000000000Z.html"), {"open_breaks": "?"}),
        (Path(f"reconciliation-{HOSTILE}.html"), None),
    ]

    markup = render_index([], pages)
    index = Page(markup)

    assert index.body_rows("reconciliations") == [
        [
            "2026-11-02 07:08:09 UTC",
            *[f"Main bank, {HOSTILE}", "99.9%", "—", "1", "1", "2", HOSTILE, "—"],
        ],
        ["2026-11-01 00:00:00 UTC", *["—"] * 8],
        [f"reconciliation-{HOSTILE}", *["—"] * 8],
    ]
    assert [a.attrs["href"] for a in index.find("a", inside="reconciliations")] == [
        p.name for p, _ in pages
    ]
    assert index.find("img") == [] and HOSTILE not in markup


# --- In a browser --------------------------------------------------------------------------


def test_chromium_draws_the_charts_without_a_console_message_or_a_request(
    recorded: Recorded, tmp_path: Path
):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    screenshot = ARTIFACTS / "reconciliation-page.png"
    screenshot.unlink(missing_ok=True)
    shutil.copyfile(recorded.page, ARTIFACTS / "reconciliation-page.html")

    rendered = render(recorded.page, tmp_path, screenshot, height=2700)

    assert rendered.console == []
    assert rendered.requests == []
    assert charts_drawn(rendered)
    assert len(rendered.dom.find("rect", inside="match-rate-chart", cls="track")) == 2
    assert len(rendered.dom.find("rect", inside="match-rate-chart", cls="matched")) == 2
    assert len(rendered.dom.find("rect", inside="reasons-chart", cls="bar")) == len(OPEN_BY_REASON)
    assert len(rendered.dom.find("rect", inside="ages-chart", cls="bar")) == len(AGES)
    assert "42.9% of 7" in rendered.dom.text
    width, height, shades = png_facts(screenshot)
    assert (width, height) == (1280, 2700)
    assert shades > 100  # text, charts and tables, not a blank page


def test_the_browser_check_sees_a_page_that_calls_out(recorded: Recorded, tmp_path: Path):
    page = tmp_path / "calls-out.html"
    markup = recorded.page.read_text(encoding="utf-8")
    without_policy = "\n".join(
        line for line in markup.splitlines() if "Content-Security-Policy" not in line
    )
    page.write_text(
        without_policy.replace("</main>", '<img src="http://127.0.0.1:9/x.png"></main>')
    )

    rendered = render(page, tmp_path)

    assert rendered.requests == ["http://127.0.0.1:9/x.png"]
