"""The audit report as rendered: what a run's page and the index say for a given audit and
ledger, built in memory (no Spark, no PostgreSQL; tests/audit/test_report.py writes pages from
a committed ledger and opens them in Chromium).

An audit's outcome is an `AuditReport` of `CheckResult`s; the ledger is a `LedgerView`, as
`read_ledger` fills it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest

from ledger_engine.audit.findings import BATCHES, FULL, AuditReport, AuditScope, CheckResult
from ledger_engine.core.money import Unit
from ledger_engine.report import (
    INDEX_NAME,
    MAX_FINDINGS,
    BatchRow,
    LedgerView,
    ThroughputPoint,
    Totals,
    render_index,
    render_page,
)
from ledger_engine.report.queries import TableTotal
from tests.support.html_page import Page
from tests.support.report_pages import ledger_view

WRITTEN = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
HOSTILE = "<img src=x onerror=alert(1)>"
ESCAPED = "&lt;img src=x onerror=alert(1)&gt;"
DATA_DOCS = "file:///srv/ledger/expectations/gx/uncommitted/data_docs/local_site/index.html"


# --- An audit and a ledger, in memory ------------------------------------------------------


def passed(name: str = "batch hash chain", suite: str = "merkle") -> CheckResult:
    return CheckResult(suite, name, True)


def failed(
    name: str, *findings: str, suite: str = "great_expectations", link: str | None = None
) -> CheckResult:
    return CheckResult(suite, name, False, findings, link)


def batch(
    batch_id: int,
    *,
    ingested: int = 100,
    rejected: int = 2,
    execute: float = 0.5,
    commit: float = 0.25,
    roots: Mapping[str, str] | None = None,
) -> BatchRow:
    return BatchRow(
        batch_id=batch_id,
        committed_at=WRITTEN - timedelta(minutes=10 - batch_id),
        ingested=ingested,
        applied=ingested - rejected,
        rejected=rejected,
        duplicates=0,
        changes=2 * ingested,
        execute_seconds=execute,
        commit_seconds=commit,
        batch_hash=f"{batch_id:064x}",
        merkle_roots=roots if roots is not None else {"accounts": f"root-{batch_id}"},
    )


def ledger(*batches: BatchRow, rejections: list[tuple[str, int]] | None = None) -> LedgerView:
    """A ledger of `batches` (oldest first) as `read_ledger` reads it (`ledger_view`)."""
    return ledger_view(batches, rejections=rejections or [])


TWO_BATCHES = ledger(batch(0), batch(1), rejections=[("invalid_event", 4)])


def page_of(report: AuditReport, view: LedgerView = TWO_BATCHES) -> Page:
    return Page(render_page(report, view, WRITTEN))


# --- Reading what was rendered -------------------------------------------------------------


def inline(markup: str, tag: str) -> list[str]:
    """The text of each <style> or <script> element without attributes (not the chart data)."""
    return re.findall(rf"<{tag}>(.*?)</{tag}>", markup, re.DOTALL)


def chart_json(markup: str) -> str:
    (data,) = re.findall(
        r'<script type="application/json" id="report-data">(.*?)</script>', markup, re.DOTALL
    )
    return data


def csp_hash(source: str) -> str:
    digest = hashlib.sha256(source.encode()).digest()
    return f"'sha256-{base64.b64encode(digest).decode()}'"


def policy(page: Page) -> str:
    (meta,) = [
        m for m in page.find("meta") if m.attrs.get("http-equiv") == "Content-Security-Policy"
    ]
    return meta.attrs["content"]


def static_file(name: str) -> str:
    return files("ledger_engine.report").joinpath("static", name).read_text("utf-8")


def verdict(page: Page) -> str:
    (element,) = page.find("div", cls="verdict")
    return element.attrs["class"]


def hrefs(page: Page, inside: str | None = None) -> list[str]:
    return [a.attrs["href"] for a in page.find("a", inside=inside)]


# --- The verdict ---------------------------------------------------------------------------


def test_a_passing_audit_says_every_check_passed() -> None:
    page = page_of(AuditReport([passed(), passed("merkle root of accounts")]))

    assert verdict(page) == "verdict pass"
    assert "All audits passed. All 2 audit checks passed." in page.text


def test_a_single_passing_check_is_named_in_the_singular() -> None:
    page = page_of(AuditReport([passed()]))

    assert "All audits passed. The 1 audit check passed." in page.text


def test_a_failing_audit_counts_its_failed_checks() -> None:
    report = AuditReport([passed(), failed("a", "x"), failed("b", "y", suite="pipeline")])

    page = page_of(report)

    assert verdict(page) == "verdict fail"
    assert "2 audit check(s) failed. 2 of 3 checks; the first findings are below." in page.text


def test_an_audit_that_ran_no_check_vouches_for_nothing() -> None:
    page = page_of(AuditReport([]))

    assert verdict(page) == "verdict fail"
    assert "No audit check ran. There is nothing to vouch for this ledger." in page.text


@pytest.mark.parametrize(
    ("scope", "says"),
    [
        (
            AuditScope(BATCHES, 3, 7),
            "Batch audit: batches 3 to 7, after the last passing audit (through batch 2).",
        ),
        (AuditScope(FULL, 0, 9), "Full audit: every batch, 0 to 9."),
    ],
)
def test_the_page_says_which_batches_the_audit_covered(scope: AuditScope, says: str) -> None:
    page = page_of(AuditReport([passed()], scope=scope))

    assert says in page.text
    (panel,) = [e for e in page.elements if e.attrs.get("id") == "audit-scope"]
    assert panel.attrs["data-kind"] == scope.kind


def test_each_suite_has_a_status_tile_that_names_its_failed_checks() -> None:
    report = AuditReport(
        [passed(), failed("accounts fold", "x"), passed("balances", suite="great_expectations")]
    )

    page = page_of(report)

    tiles = {
        e.attrs["data-suite"]: e.attrs["class"]
        for e in page.find("div", inside="suites")
        if "data-suite" in e.attrs
    }
    assert tiles == {"merkle": "tile pass", "great_expectations": "tile fail"}
    assert "Great Expectations FAILED 1 of 2 checks failed accounts fold" in page.text


# --- Failed checks -------------------------------------------------------------------------


def test_a_failed_check_lists_its_first_findings_and_counts_the_rest() -> None:
    findings = [f"accounts: key acct-{i:03d} is 5, its change log folds to 4" for i in range(12)]
    report = AuditReport([passed(), failed("accounts fold", *findings, link=DATA_DOCS)])

    page = page_of(report)

    assert "What failed Great Expectations: accounts fold" in page.text
    assert len(page.find("li", inside="failures")) == MAX_FINDINGS
    assert all(finding in page.text for finding in findings[:MAX_FINDINGS])
    assert not any(finding in page.text for finding in findings[MAX_FINDINGS:])
    assert "and 2 more findings" in page.text
    assert hrefs(page, inside="failures") == [DATA_DOCS]
    # The check's row points at its findings, and at the same Data Docs.
    assert hrefs(page, inside="checks") == ["#failure-0", DATA_DOCS]
    assert f"{findings[0]} (12 findings) Data Docs" in page.text
    assert page.text.index("What failed") < page.text.index("Throughput over batches")


def test_a_failed_check_without_findings_says_none_was_given() -> None:
    page = page_of(AuditReport([failed("replay", suite="replay")]))

    assert "Replay: replay No finding given." in page.text
    assert hrefs(page, inside="checks") == ["#failure-0"]
    assert "see above (0 findings)" in page.text


def test_failed_checks_are_numbered_in_the_order_they_ran() -> None:
    report = AuditReport(
        [failed("first", "a"), failed("second", "b", suite="pipeline"), failed("third", "c")]
    )

    page = page_of(report)

    articles = page.find("article", inside="failures")
    assert [a.attrs["id"] for a in articles] == ["failure-0", "failure-1", "failure-2"]
    # The checks table groups by suite: Great Expectations' two, then the pipeline's one.
    assert hrefs(page, inside="checks") == ["#failure-0", "#failure-2", "#failure-1"]


def test_a_passing_audit_has_no_failures_section() -> None:
    page = page_of(AuditReport([passed()]))

    assert "What failed" not in page.text
    assert page.find("article") == []


# --- Hostile text --------------------------------------------------------------------------


def test_hostile_names_findings_and_reasons_are_shown_as_text_never_as_markup() -> None:
    report = AuditReport([passed(HOSTILE, suite=HOSTILE), failed(HOSTILE, HOSTILE)])
    view = ledger(batch(0, roots={HOSTILE: HOSTILE}), rejections=[(HOSTILE, 1)])

    markup = render_page(report, view, WRITTEN)
    page = Page(markup)

    assert page.find("img") == []
    assert HOSTILE not in markup
    assert markup.count(ESCAPED) >= 7  # suite, check names, finding, table, root, reason
    assert f"Great Expectations: {HOSTILE} {HOSTILE}" in page.text  # read as written
    assert page.body_rows("merkle-roots") == [[HOSTILE, HOSTILE]]
    assert page.body_rows("rejections-table") == [[HOSTILE, "1"]]
    assert [s.attrs["data-suite"] for s in page.find("section", inside="checks")] == [
        HOSTILE,
        "great_expectations",
    ]


def test_a_link_cannot_break_out_of_its_attribute() -> None:
    link = 'https://gx.example/docs" onmouseover="alert(1)'
    page = page_of(AuditReport([failed("accounts fold", "x", link=link)]))

    assert all("onmouseover" not in a.attrs for a in page.find("a"))
    assert hrefs(page, inside="failures") == [link]


@pytest.mark.parametrize(
    "link",
    [
        "javascript:alert(1)",
        "JavaScript:alert(document.cookie)",
        "data:text/html,<script>alert(1)</script>",
        "vbscript:msgbox(1)",
    ],
)
def test_a_link_of_another_scheme_than_file_or_http_is_dropped(link: str) -> None:
    page = page_of(AuditReport([failed("accounts fold", "x", link=link)]))

    assert hrefs(page) == [INDEX_NAME, "#failure-0", INDEX_NAME]
    assert "Data Docs" not in page.text


@pytest.mark.parametrize(
    "link", [DATA_DOCS, "https://gx.example/docs", "http://gx.example/docs", "docs/index.html"]
)
def test_a_link_to_a_file_a_web_page_or_a_relative_path_is_kept(link: str) -> None:
    report = AuditReport([failed("accounts fold", "x", link=link), passed("ok", "replay")])
    page = page_of(report)

    assert hrefs(page, inside="failures") == [link]
    assert hrefs(page, inside="checks") == ["#failure-0", link]


def test_a_suites_link_reads_details_unless_the_suite_names_it() -> None:
    link = "https://ci.example/run/7"
    page = page_of(AuditReport([failed("run", "x", suite="pipeline", link=link)]))

    assert "Pipeline run: run x details" in page.text


# --- Self-contained, and locked by its policy ----------------------------------------------


def test_the_page_policy_names_the_hashes_of_its_inline_style_and_scripts() -> None:
    markup = render_page(AuditReport([passed()]), TWO_BATCHES, WRITTEN)

    (style,) = inline(markup, "style")
    theme, charts = inline(markup, "script")
    assert policy(Page(markup)) == (
        f"default-src 'none'; style-src {csp_hash(style)};"
        f" script-src {csp_hash(theme)} {csp_hash(charts)}; base-uri 'none'; form-action 'none'"
    )


def test_the_inline_style_and_scripts_are_the_packages_static_files() -> None:
    markup = render_page(AuditReport([passed()]), TWO_BATCHES, WRITTEN)

    assert inline(markup, "style") == [static_file("report.css")]
    assert inline(markup, "script") == [static_file("theme.js"), static_file("charts.js")]


def test_a_page_loads_nothing_from_elsewhere() -> None:
    page = page_of(AuditReport([failed("accounts fold", "x", link=DATA_DOCS)]))

    assert [e.tag for e in page.elements if "src" in e.attrs] == []
    assert page.find("link") == [] and page.find("img") == []
    assert len(page.find("script")) == 3  # the colour mode's script, the chart data, the charts


def test_the_index_policy_names_its_style_and_allows_only_the_colour_modes_script() -> None:
    markup = render_index([])

    (style,) = inline(markup, "style")
    (theme,) = inline(markup, "script")
    assert theme == static_file("theme.js")
    assert policy(Page(markup)) == (
        f"default-src 'none'; style-src {csp_hash(style)}; script-src {csp_hash(theme)};"
        " base-uri 'none'"
    )


# --- The charts' data ----------------------------------------------------------------------


def test_the_chart_data_parses_back_to_the_ledgers_numbers() -> None:
    view = ledger(
        batch(0, ingested=120, execute=0.5, commit=0.25),
        batch(1, ingested=7, execute=2.0, commit=0.0),
        batch(2, ingested=0, rejected=0, execute=0.0, commit=0.0),
        rejections=[("invalid_event", 3), ("overflow", 1)],
    )

    data = json.loads(chart_json(render_page(AuditReport([passed()]), view, WRITTEN)))

    assert data == {
        "throughput": [
            {"first": 0, "last": 0, "events": 120, "seconds": 0.75, "rate": 160.0},
            {"first": 1, "last": 1, "events": 7, "seconds": 2.0, "rate": 3.5},
            {"first": 2, "last": 2, "events": 0, "seconds": 0.0, "rate": None},
        ],
        "rejections": [
            {"reason": "invalid_event", "events": 3},
            {"reason": "overflow", "events": 1},
        ],
    }


def test_chart_data_cannot_end_or_bend_its_script_element() -> None:
    reason = "</script><script>alert(1)</script><!-- \u2028\u2029 & '\""
    view = ledger(batch(0), rejections=[(reason, 1)])

    markup = render_page(AuditReport([passed()]), view, WRITTEN)

    data = chart_json(markup)
    assert set(data) & set("<>&\u2028\u2029") == set()
    assert json.loads(data)["rejections"] == [{"reason": reason, "events": 1}]
    assert len(Page(markup).find("script")) == 3  # no element was smuggled in


def test_the_chart_numbers_are_also_in_tables() -> None:
    view = ledger(batch(0, ingested=1500, execute=1.0, commit=0.5), rejections=[("overflow", 2)])

    page = page_of(AuditReport([passed()]), view)

    assert page.body_rows("throughput-table") == [["0", "1,500", "1.500", "1,000"]]
    assert page.body_rows("rejections-table") == [["overflow", "2"]]


def test_a_grouped_chart_says_so_and_spans_its_batches() -> None:
    view = LedgerView(
        totals=Totals(
            batches=1200, ingested=6000, applied=5900, rejected=100, duplicates=0, changes=1
        ),
        latest=[batch(1199), batch(1198)],
        throughput=[ThroughputPoint(0, 599, 3000, 6.0), ThroughputPoint(600, 1199, 3000, 40.0)],
        rejections=[],
    )

    page = page_of(AuditReport([passed()]), view)

    assert "The numbers (consecutive batches grouped to keep the chart readable)" in page.text
    assert page.body_rows("throughput-table") == [
        ["0–599", "3,000", "6.000", "500"],
        ["600–1,199", "3,000", "40.000", "75.0"],
    ]
    assert "The latest 2 of 1,200 batches, newest first;" in page.text
    assert page.tables["batches"][-1][0] == "all 1,200"


# --- Batches -------------------------------------------------------------------------------


def test_each_batch_is_a_row_newest_first_over_a_totals_row() -> None:
    view = ledger(
        batch(0, ingested=100, rejected=3, execute=0.4, commit=0.0),
        batch(1, ingested=1234, rejected=4, execute=1.0, commit=0.234),
    )

    page = page_of(AuditReport([passed()]), view)

    newest, oldest = page.body_rows("batches")
    assert newest == [
        *("1", "2024-05-06 06:59:09 UTC"),
        *("1,234", "1,230", "4", "0", "2,468"),  # ingested, applied, rejected, duplicates, writes
        *("1.000", "0.234", "1,000"),  # execute and commit seconds, events per second
    ]
    assert oldest == [
        *("0", "2024-05-06 06:58:09 UTC"),
        *("100", "97", "3", "0", "200"),
        *("0.400", "not measured", "250"),  # committed before commit latency was recorded
    ]
    totals = page.tables["batches"][-1]
    assert totals == ["all 2", "", "1,334", "1,327", "7", "0", "2,668", "", "", ""]
    assert "All 2 batches, newest first." in page.text


def test_each_table_of_integers_shows_its_total_as_money_in_its_unit() -> None:
    view = replace(
        TWO_BATCHES,
        tables=[
            TableTotal("accounts", 3, -123_456, Unit("EUR", 2)),
            TableTotal(HOSTILE, 1, 1_234_567, None),  # no unit: thousands separators
        ],
    )

    markup = render_page(AuditReport([passed()]), view, WRITTEN)
    page = Page(markup)

    figures = page.text_in("figures")
    assert "accounts total -1,234.56 EUR 3 rows" in figures
    assert f"{HOSTILE} total 1,234,567 1 row" in figures  # read as written, never markup
    assert page.find("img") == [] and HOSTILE not in markup


def test_the_head_of_the_hash_chain_is_the_newest_batch() -> None:
    view = ledger(batch(0), batch(1, roots={"b_table": "root-b", "a_table": "root-a"}))

    page = page_of(AuditReport([passed()]), view)

    assert f"Batch 1, committed 2024-05-06 06:59:09 UTC: {1:064x}" in page.text
    assert page.body_rows("merkle-roots") == [["a_table", "root-a"], ["b_table", "root-b"]]


def test_an_empty_ledger_renders_with_no_batch_and_empty_charts() -> None:
    empty = ledger()

    markup = render_page(AuditReport([passed()]), empty, WRITTEN)
    page = Page(markup)

    assert "No batch has been committed yet." in page.text
    assert "All 0 batches, newest first." in page.text
    assert page.body_rows("batches") == []
    assert page.tables["batches"][-1][0] == "all 0"
    assert page.body_rows("throughput-table") == []
    assert json.loads(chart_json(markup)) == {"throughput": [], "rejections": []}


# --- The index -----------------------------------------------------------------------------


def summary(**fields: Any) -> dict[str, Any]:
    """A run's summary as `write_report` keeps it beside the page."""
    return {
        "created": "2024-05-06T07:08:09.123456+00:00",
        "audit": {"kind": FULL, "first_batch": 0, "last_batch": 1},
        "passed": True,
        "checks": 4,
        "failed": 0,
        "failed_suites": [],
        "batches": 2,
        "ingested": 12345,
        "applied": 12000,
        "rejected": 300,
        "duplicates": 45,
    } | fields


def test_the_index_counts_its_runs_as_words_do() -> None:
    one = Page(render_index([(Path("audit-20240506T070809123456Z.html"), summary())]))

    assert "1 audit run, newest first" in one.text
    assert "1 audit runs" not in one.text


def test_the_index_lists_each_run_with_its_verdict_counts_and_scope() -> None:
    runs: list[tuple[Path, dict[str, Any] | None]] = [
        (Path("audit-20240506T070809123456Z.html"), summary()),
        (
            Path("audit-20240506T060000000000Z.html"),
            summary(
                passed=False,
                failed=2,
                failed_suites=["great_expectations", "pipeline"],
                audit={"kind": BATCHES, "first_batch": 3, "last_batch": 7},
            ),
        ),
        (Path("audit-20240505T000000000000Z.html"), summary(audit=None, checks="?")),
        (Path("audit-20240504T000000000000Z.html"), None),
    ]

    page = Page(render_index(runs))

    assert "4 audit runs, newest first" in page.text
    assert hrefs(page, inside="runs") == [path.name for path, _ in runs]
    counts = ["2", "12,345", "12,000", "300", "45"]
    unsaid = ["—"] * 3  # who wrote it, what its run added, its reconciliations: not in these
    assert page.body_rows("runs") == [
        ["2024-05-06 07:08:09 UTC", "passed", "4", *counts, "full", *unsaid],
        [
            "2024-05-06 06:00:00 UTC",
            "2 failed (Great Expectations, Pipeline run)",
            "4",
            *counts,
            "batches 3–7",
            *unsaid,
        ],
        ["2024-05-05 00:00:00 UTC", "passed", "—", *counts, "—", *unsaid],
        ["2024-05-04 00:00:00 UTC", *["—"] * 11],
    ]


def test_the_index_shows_hostile_page_names_and_suites_as_text() -> None:
    runs = [
        (Path(f"audit-{HOSTILE}.html"), summary(passed=False, failed=1, failed_suites=[HOSTILE]))
    ]

    markup = render_index(runs)
    page = Page(markup)

    assert page.find("img") == []
    assert HOSTILE not in markup
    assert hrefs(page, inside="runs") == [f"audit-{HOSTILE}.html"]
    assert page.body_rows("runs")[0][:2] == [f"audit-{HOSTILE}", f"1 failed ({HOSTILE})"]
