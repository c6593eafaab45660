"""Where a report page comes from: every audit page and reconciliation page says who wrote it
(an Airflow DAG run's task, or a `ledger` command on a host), an audit page which batches the
pipeline run before it added (or else those it covered), and pages about the same batches
link to each other, the later one directly and the earlier one through its row of the index.

A folder is filled as a deployment fills it, one page after the other (the ledger's batches
committed through the pipeline, reconciliations recorded by the plain Python matcher), and
read as written: who wrote each page, on the page and in the index; the batches and their
events against the database; every link followed to a page and an anchor that exist; a page
with links opened in Chromium, offline. The `ledger audit` and `ledger reconcile` commands
write their pages the same way (one in-process run of each). The DAGs' pages are checked on
the DAG tests' own runs (tests/dags/test_ledger_dag.py, test_reconcile_dag.py).
"""

from __future__ import annotations

import getpass
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from sqlalchemy import Engine

from ledger_engine.audit.findings import BATCHES, FULL, AuditReport, AuditScope, CheckResult
from ledger_engine.cli import main
from ledger_engine.config import PROJECT_ROOT
from ledger_engine.reconcile.matching.reference import match
from ledger_engine.reconcile.run import reconcile
from ledger_engine.reconcile.sources import Sources
from ledger_engine.report import render_index, write_reconciliation_page, write_report
from ledger_engine.report.links import row_id
from ledger_engine.report.naming import INDEX_NAME
from ledger_engine.report.provenance import COMMAND, BatchSpan, Provenance, RunBatches
from ledger_engine.store.database import connect
from tests.support.bank import deposit
from tests.support.bank_workload import commit_bank_workload
from tests.support.browser import render
from tests.support.database import rows
from tests.support.events import event_file
from tests.support.html_page import Element, Page, read_page
from tests.support.reconcile import csv_source

PIPELINE_RUN = "manual__2026-11-02T07:08:09+00:00"
PIPELINE = Provenance.from_airflow("ledger_pipeline", PIPELINE_RUN, "write_audit_report")
RECONCILE_DAG = Provenance.from_airflow(
    "ledger_reconcile", "asset_triggered__2026-11-02", "write_reconciliation_page"
)
AUDIT_COMMAND = Provenance.from_command("ledger audit", host="ops-1", user="ana")
FULL_COMMAND = Provenance.from_command("ledger audit --full", host="ops-1", user="ana")
# Run where the system has no name for the user (a container's bare uid): the host only.
RECONCILE_COMMAND = Provenance(COMMAND, command="ledger reconcile", host="<b>ops-2</b>")
SOURCES = Sources({"bank": csv_source("bank", "alice")}, digest="p" * 64)
PASSED = [CheckResult("merkle", "batch hash chain", True)]


# --- A folder filled as a deployment fills it ----------------------------------------------


@dataclass(frozen=True)
class Folder:
    """The pages, in the order they were written, and the ledger they are about."""

    engine: Engine
    reports: Path
    first_reconciliation: Path  # by the DAG: batches 0–1, before any audit
    pipeline_audit: Path  # by the DAG: its run added batches 0–1, audited 0–1
    standalone_audit: Path  # `ledger audit`: batch 2, committed by a run it did not follow
    second_reconciliation: Path  # `ledger reconcile`: batch 2
    full_audit: Path  # `ledger audit --full`: every batch

    @property
    def pages(self) -> list[Path]:
        return [
            self.first_reconciliation,
            self.pipeline_audit,
            self.standalone_audit,
            self.second_reconciliation,
            self.full_audit,
        ]


@pytest.fixture(scope="module")
def folder(
    module_database_url: str, commit_files, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Folder]:
    engine = connect(module_database_url)
    reports = tmp_path_factory.mktemp("reports")
    statements = tmp_path_factory.mktemp("statements")  # none landed: the ledger side only

    def reconciled(written_by: Provenance) -> Path:
        report = reconcile(engine, SOURCES, statements, match, who="pytest")
        run_ids = [part.record.run_id for part in report.sources if part.record is not None]
        return write_reconciliation_page(reports, engine, run_ids, written_by=written_by)

    def audited(scope: AuditScope, written_by: Provenance, run: RunBatches | None) -> Path:
        report = AuditReport(PASSED, scope)
        return write_report(engine, report, reports, written_by=written_by, run=run)

    commit_bank_workload(commit_files, engine)  # batches 0 and 1
    first_reconciliation = reconciled(RECONCILE_DAG)
    pipeline_audit = audited(AuditScope(BATCHES, 0, 1), PIPELINE, RunBatches(BatchSpan(0, 1)))
    late = [deposit("late-1", "alice", 5), deposit("late-2", "bob", 7)]
    commit_files(engine, 2, [("inbox/0003.jsonl", event_file(late))])
    standalone_audit = audited(AuditScope(BATCHES, 2, 2), AUDIT_COMMAND, None)
    second_reconciliation = reconciled(RECONCILE_COMMAND)
    full_audit = audited(AuditScope(FULL, 0, 2), FULL_COMMAND, None)
    yield Folder(
        engine,
        reports,
        first_reconciliation,
        pipeline_audit,
        standalone_audit,
        second_reconciliation,
        full_audit,
    )
    engine.dispose()


def element(page: Page, element_id: str) -> Element:
    """The element of id `element_id`."""
    [found] = [e for e in page.elements if e.attrs.get("id") == element_id]
    return found


def page_links(page: Path) -> list[str]:
    """The pages of the other kind a page links to (in its panel of where it comes from)."""
    links = read_page(page).find("a", inside="linked-pages")
    return [a.attrs["href"] for a in links if not a.attrs["href"].startswith(INDEX_NAME)]


def row_links(index: Page, page: Path) -> list[str]:
    """The pages of the other kind `page`'s row of the index links to."""
    links = index.find("a", inside=row_id(page))
    return [a.attrs["href"] for a in links if a.attrs["href"] != page.name]


def broken_links(page: Path) -> list[str]:
    """The links of `page` that lead nowhere: to no file beside it, or to no element of that
    file with the anchor's id. Links with a scheme (Data Docs, say) are not the report's."""
    broken = []
    for a in read_page(page).find("a"):
        href = a.attrs["href"]
        if urlsplit(href).scheme:
            continue
        name, _, anchor = href.partition("#")
        target = page.parent / name if name else page
        if not target.is_file() or (anchor and anchor not in ids(target)):
            broken.append(href)
    return broken


def ids(page: Path) -> set[str]:
    return {e.attrs["id"] for e in read_page(page).elements if "id" in e.attrs}


# --- Who wrote each page -------------------------------------------------------------------


def test_each_page_says_who_wrote_it_and_the_index_says_it_too(folder: Folder):
    said = {page: read_page(page).text_in("written-by") for page in folder.pages}

    assert said == {
        folder.pipeline_audit: f"Written by DAG ledger_pipeline, DAG run {PIPELINE_RUN},"
        " task write_audit_report.",
        folder.first_reconciliation: "Written by DAG ledger_reconcile,"
        " DAG run asset_triggered__2026-11-02, task write_reconciliation_page.",
        folder.standalone_audit: "Written by command ledger audit, host ops-1, user ana.",
        folder.full_audit: "Written by command ledger audit --full, host ops-1, user ana.",
        # A name is text, never markup.
        folder.second_reconciliation: "Written by command ledger reconcile, host <b>ops-2</b>.",
    }
    assert read_page(folder.second_reconciliation).find("b") == []
    header = f"by airflow ledger_pipeline {PIPELINE_RUN} (task write_audit_report)"
    assert header in read_page(folder.pipeline_audit).text

    index = read_page(folder.reports / INDEX_NAME)
    assert [row[-3] for row in index.body_rows("runs")] == [  # newest first
        "ledger audit --full (ana@ops-1)",
        "ledger audit (ana@ops-1)",
        f"airflow ledger_pipeline {PIPELINE_RUN} (task write_audit_report)",
    ]
    assert [row[-2] for row in index.body_rows("reconciliations")] == [
        "ledger reconcile (on <b>ops-2</b>)",
        "airflow ledger_reconcile asset_triggered__2026-11-02 (task write_reconciliation_page)",
    ]


# --- The batches an audit page is about -----------------------------------------------------


def batch_sums(engine: Engine, first: int, last: int) -> tuple[int, ...]:
    """(batches, events, applied, rejected, duplicates) over batches `first` to `last`."""
    return rows(
        engine,
        "SELECT count(*), sum(events_ingested), sum(applied), sum(rejected), sum(duplicates)"
        " FROM ledger_batches WHERE batch_id BETWEEN :first AND :last",
        first=first,
        last=last,
    )[0]


def test_an_audit_page_names_the_batches_its_run_added_or_else_those_it_covered(folder: Folder):
    after_run = read_page(folder.pipeline_audit)
    standalone = read_page(folder.standalone_audit)

    shown = element(after_run, "batches-added").attrs
    assert (shown["data-by"], shown["data-first"], shown["data-last"]) == ("run", "0", "1")
    batches, events, applied, rejected, duplicates = batch_sums(folder.engine, 0, 1)
    assert batches == 2 and events > 0
    assert after_run.text_in("batches-added") == (
        f"The pipeline run before this audit added batches 0–1: 2 batches of {events} events"
        f" ({applied} applied, {rejected} rejected, {duplicates} duplicates)."
    )
    # `ledger audit` followed no run of its own: the batches of its scope.
    assert element(standalone, "batches-added").attrs["data-by"] == "scope"
    _, late, applied, rejected, duplicates = batch_sums(folder.engine, 2, 2)
    assert standalone.text_in("batches-added") == (
        f"This audit covered batch 2: 1 batch of {late} events"
        f" ({applied} applied, {rejected} rejected, {duplicates} duplicates)."
    )
    index = read_page(folder.reports / INDEX_NAME)
    assert [row[-2] for row in index.body_rows("runs")] == [
        "—",
        "—",
        f"batches 0–1, {events} events",
    ]


def test_a_run_that_added_nothing_says_so_and_a_failed_run_leaves_the_scope_to_speak(
    tmp_path: Path, engine: Engine
):
    scope = AuditScope(BATCHES, 0, -1)

    nothing = write_report(engine, AuditReport(PASSED, scope), tmp_path, run=RunBatches(None))
    failed = write_report(
        engine, AuditReport(PASSED, scope), tmp_path, run=RunBatches.from_summary(None)
    )

    said = read_page(nothing).text_in("batches-added")
    assert said == "The pipeline run before this audit added no batch."
    assert read_page(failed).text_in("batches-added") == "This audit covered no batch."
    assert read_page(failed).text_in("linked-pages") == (
        "This page is about no new batch, so it links to no reconciliations."
    )
    # Nor does anyone say who wrote a page when its caller does not.
    assert read_page(failed).text_in("written-by") == "Who wrote this page was not recorded."


# --- Links between pages about the same batches --------------------------------------------


def test_pages_about_the_same_batches_link_each_other_the_later_directly(folder: Folder):
    # Written before any audit, the first reconciliation links to none; its row of the
    # index links to the pipeline's audit of the batches it read, written after it.
    assert page_links(folder.first_reconciliation) == []
    assert page_links(folder.pipeline_audit) == [folder.first_reconciliation.name]
    # Batch 2 is the standalone audit's and the second reconciliation's only.
    assert page_links(folder.standalone_audit) == []
    assert page_links(folder.second_reconciliation) == [folder.standalone_audit.name]
    # A full audit covers every batch: it would link to every reconciliation, so to none.
    assert page_links(folder.full_audit) == []

    index = read_page(folder.reports / INDEX_NAME)
    assert {page.name: row_links(index, page) for page in folder.pages} == {
        folder.first_reconciliation.name: [folder.pipeline_audit.name],
        folder.pipeline_audit.name: [folder.first_reconciliation.name],
        folder.standalone_audit.name: [folder.second_reconciliation.name],
        folder.second_reconciliation.name: [folder.standalone_audit.name],
        folder.full_audit.name: [],
    }
    for page in folder.pages:
        links = read_page(page).find("a", inside="linked-pages")
        if page != folder.full_audit:
            assert links[-1].attrs["href"] == f"{INDEX_NAME}#{row_id(page)}"
    assert read_page(folder.full_audit).text_in("linked-pages") == (
        "A full audit covers every batch, so it links to no reconciliations in particular;"
        " the index lists every one."
    )


def test_every_link_of_every_page_and_of_the_index_leads_to_a_page_and_anchor_that_exist(
    folder: Folder,
):
    for page in [*folder.pages, folder.reports / INDEX_NAME]:
        assert broken_links(page) == [], page.name


def test_a_page_with_links_works_offline_in_a_browser(folder: Folder, tmp_path: Path):
    rendered = render(folder.pipeline_audit, tmp_path)

    assert rendered.console == [] and rendered.requests == []
    linked = [a.attrs["href"] for a in rendered.dom.find("a", inside="linked-pages")]
    assert linked == [
        folder.first_reconciliation.name,
        f"{INDEX_NAME}#{row_id(folder.pipeline_audit)}",
    ]


def test_the_index_links_a_reconciliation_to_every_batch_audit_of_the_batches_it_read():
    def audit(first: int, last: int, kind: str = BATCHES) -> dict[str, Any]:
        return {"passed": True, "audit": {"kind": kind, "first_batch": first, "last_batch": last}}

    def read(first: int, last: int) -> dict[str, Any]:
        return {"batches": {"first_batch": first, "last_batch": last}}

    audits = {  # newest first, as the folder lists them
        "full": audit(0, 9, FULL),
        "nothing new": audit(7, 6),
        "4–6": audit(4, 6),
        "2–3 again": audit(2, 3),  # the audit of 0–3 failed: 2–3 audited again
        "0–3": audit(0, 3),
        "no summary": None,
    }
    reconciliations = {"none read": {"batches": None}, "7–9": read(7, 9), "3–4": read(3, 4)}
    reconciliations["0"] = read(0, 0)
    pages = {
        label: Path(f"{prefix}202611{day:02d}T000000000000Z.html")
        for prefix, labels in (("audit-", audits), ("reconciliation-", reconciliations))
        for day, label in zip(range(30, 0, -1), labels, strict=False)
    }

    index = Page(
        render_index(
            [(pages[label], summary) for label, summary in audits.items()],
            [(pages[label], summary) for label, summary in reconciliations.items()],
        )
    )

    label_of = {page.name: label for label, page in pages.items()}
    linked = {label: [label_of[n] for n in row_links(index, page)] for label, page in pages.items()}
    assert linked == {
        "full": [],
        "nothing new": [],
        "4–6": ["3–4"],
        "2–3 again": ["3–4"],
        "0–3": ["3–4", "0"],  # newest first
        "no summary": [],
        "none read": [],
        "7–9": [],
        "3–4": ["4–6", "2–3 again", "0–3"],
        "0": ["0–3"],
    }


# --- The commands --------------------------------------------------------------------------


def test_ledger_audit_and_ledger_reconcile_name_their_command_host_and_user(
    bank_database_url: str, spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    settings = {
        "LEDGER_DATABASE_URL": bank_database_url,  # batches 0 and 1 committed
        "LEDGER_DATA_DIR": str(tmp_path),
        "LEDGER_EXPECTATIONS": str(tmp_path / "expectations"),
        "LEDGER_RECONCILIATION": str(PROJECT_ROOT / "expectations/bank/reconciliation.toml"),
    }
    for name, value in settings.items():
        monkeypatch.setenv(name, value)

    assert main(["audit"]) == 0
    assert main(["reconcile"]) == 0

    reports = tmp_path / "reports"
    [audit] = reports.glob("audit-*.html")
    [reconciliation] = reports.glob("reconciliation-*.html")
    here = f"host {socket.gethostname()}, user {getpass.getuser()}"
    assert read_page(audit).text_in("written-by") == f"Written by command ledger audit, {here}."
    assert read_page(reconciliation).text_in("written-by") == (
        f"Written by command ledger reconcile, {here}."
    )
    assert read_page(audit).text_in("batches-added").startswith("This audit covered batches 0–1")
    assert page_links(reconciliation) == [audit.name]  # it read the batches the audit covered
    index = read_page(reports / INDEX_NAME)
    who = f"({getpass.getuser()}@{socket.gethostname()})"
    assert [row[-3] for row in index.body_rows("runs")] == [f"ledger audit {who}"]
    assert [row[-2] for row in index.body_rows("reconciliations")] == [f"ledger reconcile {who}"]
    assert row_links(index, audit) == [reconciliation.name]
