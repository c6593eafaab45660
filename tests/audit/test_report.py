"""The HTML audit report: what a person reads after every run.

The page is checked twice: as written (its numbers are the batch rows', its findings and links
are there, the index lists every run newest first) and as a browser shows it: headless Chromium
(Debian's `chromium`) runs the page's script, which must draw both charts and say nothing on
the console; a screenshot is kept in `test-artifacts/` for a person to look at.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from sqlalchemy import Engine, text

from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.audit.findings import AuditReport, CheckResult
from ledger_engine.config import PROJECT_ROOT
from ledger_engine.core.records import Event
from ledger_engine.pipeline.job import BatchProcessor, files_frame
from ledger_engine.report import latest_report, write_report
from ledger_engine.store.commit import batch_row_hash
from ledger_engine.store.database import connect
from ledger_engine.store.lease import run_lease
from tests.support.bank import deposit, lookup, transfer
from tests.support.browser import charts_drawn, png_facts, render
from tests.support.events import event_file
from tests.support.html_page import read_page

ARTIFACTS = PROJECT_ROOT / "test-artifacts" / "audit-report"
DATA_DOCS = "file:///srv/ledger/expectations/gx/uncommitted/data_docs/local_site/index.html"
HOSTILE = "<script>alert('x')</script>"


# --- The ledger: two small batches with every outcome ------------------------------------


BATCHES: tuple[list[Event | bytes], ...] = (
    [
        deposit("d1", "alice", 100, asset="alice-gold"),
        deposit("d2", "bob", 50, asset="bob-gold"),
        b"this line is not JSON",  # invalid_event
        deposit("d3", "alice", -5, asset="alice-gold"),  # aborted: amounts are positive
        deposit("d4", "alice", 2**70, asset="alice-gold"),  # overflow
    ],
    [
        deposit("d1", "alice", 100, asset="alice-gold"),  # duplicate
        deposit("d5", None, 10, asset="None-gold"),  # bad_key: no account
        deposit("d6", "carol", 7, asset="carol-gold", ammount=7),  # invalid_event: unknown field
        transfer("t1", "alice", "bob", 30, assets=("alice-gold", "bob-gold")),
        deposit("d7", "dave", 5, asset="dave-gold"),
        lookup("b1", "alice"),
    ],
)
# Rejected events by reason, as the report orders them: most frequent first, then by name.
REASONS = {"invalid_event": 2, "aborted": 1, "bad_key": 1, "overflow": 1}


@pytest.fixture(scope="module")
def ledger(module_database_url: str, spark: SparkSession) -> Iterator[Engine]:
    """The module's ledger: `BATCHES` committed through the pipeline (Spark, staging, commit)."""
    engine = connect(module_database_url)
    with run_lease(engine, "test_report") as lease:
        processor = BatchProcessor(spark, build_ledger(), engine, lease)
        for batch_id, lines in enumerate(BATCHES):
            content = event_file(lines)
            processor.process(batch_id, files_frame(spark, [(f"in/{batch_id}.jsonl", content)]))
    yield engine
    engine.dispose()


def batch_rows(engine: Engine) -> list[dict]:
    with engine.connect() as conn:
        found = conn.execute(text("SELECT * FROM ledger_batches ORDER BY batch_id DESC"))
        return [dict(row._mapping) for row in found]


def rate_text(rate: float) -> str:
    """Events per second as the page shows them: whole from 100 up, one decimal below."""
    return f"{rate:,.0f}" if rate >= 100 else f"{rate:,.1f}"


# --- Audit outcomes to report --------------------------------------------------------------

GX_FINDINGS = tuple(
    f"accounts: key acct-{i:03d} is 5, its change log folds to 4" for i in range(12)
)


def mixed_report() -> AuditReport:
    """Passing and failing checks of four suites, one with a finding that is markup."""
    return AuditReport(
        [
            CheckResult("merkle", "batch hash chain", True),
            CheckResult("merkle", "merkle root of accounts", True),
            CheckResult(
                "great_expectations",
                "accounts equals the fold of its change log",
                False,
                GX_FINDINGS,
                DATA_DOCS,
            ),
            CheckResult("great_expectations", "no account balance below 0", True, (), DATA_DOCS),
            CheckResult("replay", "the change log equals a serial replay", True),
            CheckResult("pipeline", "run_micro_batches committed the inbox", False, (HOSTILE,)),
        ]
    )


def passing_report() -> AuditReport:
    return AuditReport([CheckResult("merkle", "batch hash chain", True)])


# --- Reading a page ------------------------------------------------------------------------


# --- The page's content --------------------------------------------------------------------


def test_each_batch_row_is_shown_with_its_numbers(ledger: Engine, tmp_path: Path) -> None:
    page = read_page(write_report(ledger, mixed_report(), tmp_path))

    rows = batch_rows(ledger)
    assert [int(r[0]) for r in page.body_rows("batches")] == [1, 0]  # newest first
    for shown, row in zip(page.body_rows("batches"), rows, strict=True):
        seconds = row["execute_seconds"] + row["commit_seconds"]
        assert shown[2:] == [
            f"{row['events_ingested']:,}",
            f"{row['applied']:,}",
            f"{row['rejected']:,}",
            f"{row['duplicates']:,}",
            f"{row['changes']:,}",
            f"{row['execute_seconds']:,.3f}",
            f"{row['commit_seconds']:,.3f}",
            rate_text(row["events_ingested"] / seconds),
        ]
    total = page.tables["batches"][-1]
    assert total[0] == "all 2"
    assert total[2:7] == [
        f"{sum(r[name] for r in rows):,}"
        for name in ("events_ingested", "applied", "rejected", "duplicates", "changes")
    ]
    assert [r["rejected"] for r in reversed(rows)] == [3, 2]
    assert [r["duplicates"] for r in reversed(rows)] == [0, 1]


def test_the_charts_data_is_every_batch_and_every_rejection_reason(
    ledger: Engine, tmp_path: Path
) -> None:
    page = read_page(write_report(ledger, mixed_report(), tmp_path))
    data = json.loads(page.json_data)

    rows = list(reversed(batch_rows(ledger)))
    assert [(p["first"], p["last"], p["events"]) for p in data["throughput"]] == [
        (r["batch_id"], r["batch_id"], r["events_ingested"]) for r in rows
    ]
    for point, row in zip(data["throughput"], rows, strict=True):
        seconds = row["execute_seconds"] + row["commit_seconds"]
        assert point["rate"] == pytest.approx(row["events_ingested"] / seconds)
    assert {r["reason"]: r["events"] for r in data["rejections"]} == REASONS
    assert page.body_rows("rejections-table") == [[r, f"{n:,}"] for r, n in REASONS.items()]


def test_failures_come_first_with_their_findings_and_links(ledger: Engine, tmp_path: Path) -> None:
    path = write_report(ledger, mixed_report(), tmp_path)
    page = read_page(path)

    assert "2 audit check(s) failed. 2 of 6 checks; the first findings are below." in page.text
    tiles = {
        t.attrs["data-suite"]: t.attrs["class"]
        for t in page.find("div", inside="suites")
        if "data-suite" in t.attrs
    }
    assert tiles == {
        "merkle": "tile pass",
        "great_expectations": "tile fail",
        "replay": "tile pass",
        "pipeline": "tile fail",
    }
    assert len(page.find("article", cls="failure")) == 2
    findings = [e for e in page.find("li") if "failures" in e.inside]
    assert len(findings) == 10 + 1  # the first ten of the twelve, and the one
    for finding in (*GX_FINDINGS[:10], HOSTILE):
        assert finding in page.text
    assert GX_FINDINGS[10] not in page.text
    assert "and 2 more findings" in page.text
    assert HOSTILE not in path.read_text()  # shown as text, never as markup
    data_docs = [a for a in page.find("a") if a.attrs["href"] == DATA_DOCS]
    assert len(data_docs) == 3  # the failure's, and each expectation's row
    assert page.text.index("What failed") < page.text.index("Throughput over batches")


def test_each_tables_total_reads_as_money_in_its_unit(ledger: Engine, tmp_path: Path) -> None:
    page = read_page(write_report(ledger, passing_report(), tmp_path))

    # alice 70, bob 80 and dave 5 cents (d1 once, t1 moved 30); one unit of gold each deposit
    # (t1 moved alice's to bob): the accounts in EUR/2, the asset entries in units/0.
    figures = page.text_in("figures")
    assert "accounts total 1.55 EUR 3 rows" in figures
    assert "asset_ledger total 3 units 3 rows" in figures


def test_the_head_of_the_hash_chain_is_shown(ledger: Engine, tmp_path: Path) -> None:
    page = read_page(write_report(ledger, passing_report(), tmp_path))
    head = batch_rows(ledger)[0]

    assert "All audits passed. The 1 audit check passed." in page.text
    assert head["batch_hash"] in page.text
    assert page.body_rows("merkle-roots") == [
        [table, root] for table, root in sorted(head["merkle_roots"].items())
    ]


def test_a_long_ledger_lists_its_latest_batches_and_groups_the_chart(
    ledger: Engine, tmp_path: Path
) -> None:
    page = read_page(
        write_report(ledger, passing_report(), tmp_path, table_batches=1, chart_points=1)
    )

    assert [r[0] for r in page.body_rows("batches")] == ["1"]
    assert page.tables["batches"][-1][0] == "all 2"
    assert "The latest 1 of 2 batches" in page.text
    rows = {r["batch_id"]: r for r in batch_rows(ledger)}
    points = json.loads(page.json_data)["throughput"]
    assert [(p["first"], p["last"]) for p in points] == [(0, 1)]
    assert points[0]["events"] == rows[0]["events_ingested"] + rows[1]["events_ingested"]


def test_the_index_lists_every_run_newest_first(ledger: Engine, tmp_path: Path) -> None:
    assert latest_report(tmp_path / "none yet") is None
    written = [
        write_report(ledger, report, tmp_path)
        for report in (passing_report(), mixed_report(), passing_report())
    ]

    assert latest_report(tmp_path) == written[-1]
    assert (tmp_path / "index.html").stat().st_mode & 0o777 == 0o644  # readable by a web server
    index = read_page(tmp_path / "index.html")
    links = [a.attrs["href"] for a in index.find("a", inside="runs")]
    assert links == [p.name for p in reversed(written)]
    verdicts = [row[1] for row in index.body_rows("runs")]
    assert verdicts == ["passed", "2 failed (Great Expectations, Pipeline run)", "passed"]
    events = sum(len(lines) for lines in BATCHES)
    assert all(row[3:5] == ["2", f"{events:,}"] for row in index.body_rows("runs"))
    for page in written:  # each page links back to the index
        assert "index.html" in [a.attrs["href"] for a in read_page(page).find("a")]


# --- Commit latency ------------------------------------------------------------------------


def test_each_batch_records_its_commit_latency_outside_its_hash(ledger: Engine) -> None:
    rows = batch_rows(ledger)

    assert all(row["commit_seconds"] > 0 for row in rows)
    assert all(batch_row_hash(row) == row["batch_hash"] for row in rows)
    with ledger.connect() as conn:
        grants = conn.execute(
            text(
                "SELECT has_column_privilege('ledger_writer', 'ledger_batches',"
                " 'commit_seconds', 'INSERT'),"
                " has_column_privilege('ledger_auditor', 'ledger_batches',"
                " 'commit_seconds', 'SELECT')"
            )
        ).one()
    assert tuple(grants) == (True, True)


# --- In a browser --------------------------------------------------------------------------


def test_chromium_draws_the_charts_without_a_console_message(
    ledger: Engine, tmp_path: Path
) -> None:
    page = write_report(ledger, mixed_report(), tmp_path)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    screenshot = ARTIFACTS / "audit-report.png"
    screenshot.unlink(missing_ok=True)
    (ARTIFACTS / "audit-report.html").write_text(page.read_text())

    rendered = render(page, tmp_path, screenshot)

    assert rendered.console == []
    assert rendered.requests == []  # works offline: nothing fetched from anywhere
    assert charts_drawn(rendered)
    assert len(rendered.dom.find("circle", inside="throughput-chart", cls="point")) == len(BATCHES)
    assert len(rendered.dom.find("polyline", inside="throughput-chart", cls="line")) == 1
    assert len(rendered.dom.find("rect", inside="rejections-chart", cls="bar")) == len(REASONS)
    width, height, shades = png_facts(screenshot)
    assert (width, height) == (1280, 2400)
    assert shades > 100  # text, charts and tiles, not a blank page
    assert screenshot.stat().st_size > 20_000


def test_chromium_shows_an_empty_ledger_without_a_console_message(
    engine: Engine, tmp_path: Path
) -> None:
    page = write_report(engine, passing_report(), tmp_path)

    rendered = render(page, tmp_path)

    assert rendered.console == []
    assert charts_drawn(rendered)
    assert rendered.dom.find("svg") == []
    assert "No batch has been committed yet." in rendered.dom.text
    assert "No event has been rejected." in rendered.dom.text


def broken(markup: str, how: str) -> str:
    if how == "data":  # the chart data no longer parses: the script throws
        return re.sub(r'(id="report-data">)\{', r"\1{oops", markup)
    # a script from elsewhere: the page's policy blocks it, and says so
    return markup.replace("</main>", '<script src="https://cdn.example/chart.js"></script></main>')


@pytest.mark.parametrize("how", ["data", "foreign script"])
def test_the_browser_check_catches_a_broken_page(ledger: Engine, tmp_path: Path, how: str) -> None:
    page = write_report(ledger, mixed_report(), tmp_path)
    page.write_text(broken(page.read_text(), how))

    rendered = render(page, tmp_path)

    assert rendered.console != []
    if how == "data":
        assert "Uncaught SyntaxError" in rendered.console[0]
        assert not charts_drawn(rendered)
        assert rendered.dom.find("svg") == []
    else:
        assert "Content Security Policy" in rendered.console[0]
