"""What the page and the index show, derived from an audit's outcome and the ledger.

The decisions live here (which checks failed and in what order, how many findings a page
lists, which links it may follow, what a suite is called); the templates only lay them out and
word them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import count
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ledger_engine.audit.findings import FULL, MAX_FINDINGS, AuditReport, AuditScope, CheckResult
from ledger_engine.report.formats import MISSING, utc_time
from ledger_engine.report.links import LINKS_SHOWN, index_anchor, row_id, scope_span
from ledger_engine.report.naming import (
    PAGE_PREFIX,
    RECONCILIATION_PREFIX,
    page_created,
    page_name,
)
from ledger_engine.report.provenance import BatchSpan, Provenance, RunBatches
from ledger_engine.report.queries import BatchRow, LedgerView, Totals

TILE_FAILURES = 5  # failed checks named on a suite's status tile; the rest are counted

# Friendlier titles of the suites this platform runs; any other suite shows under its own name.
_SUITE_TITLES = {
    "merkle": "Merkle roots & hash chain",
    "great_expectations": "Great Expectations",
    "replay": "Replay",
    "pipeline": "Pipeline run",
    "invariants": "Declared invariants",
    "reconciliation": "Reconciliation",  # Great Expectations' rules over reconciliation's tables
}
_LINK_TEXTS = {"great_expectations": "Data Docs", "reconciliation": "Data Docs"}
_LINK_SCHEMES = ("", "file", "http", "https")  # never javascript: or data:

# The index's number columns: (heading, key of the run's summary), in the order shown.
INDEX_COUNTS = (
    ("checks", "checks"),
    ("batches", "batches"),
    ("events", "ingested"),
    ("applied", "applied"),
    ("rejected", "rejected"),
    ("duplicates", "duplicates"),
)


def suite_title(suite: str) -> str:
    """What a suite is called on a page."""
    return _SUITE_TITLES.get(suite, suite.replace("_", " ").capitalize())


@dataclass(frozen=True)
class Link:
    """A link a page may show: its target and its text."""

    href: str
    label: str


def safe_link(check: CheckResult) -> Link | None:
    """The check's link, if it has one whose scheme a page may follow."""
    if not check.link or urlsplit(check.link).scheme.lower() not in _LINK_SCHEMES:
        return None
    return Link(check.link, _LINK_TEXTS.get(check.suite, "details"))


@dataclass(frozen=True)
class LinkList:
    """Links to other pages of the report: the first `LINKS_SHOWN`, and how many are left."""

    shown: list[Link]
    more: int


def link_list(pages: Sequence[Path], prefix: str) -> LinkList:
    """Links to `pages` (pages of a kind named by `prefix`, in the same folder: each by its
    name, read as its time)."""
    shown = [Link(page.name, _page_time(page, prefix)) for page in pages[:LINKS_SHOWN]]
    return LinkList(shown, len(pages) - len(shown))


# Why a page links to no page of the other kind, whatever the folder holds (`links`).
UNLINKED_FULL = "full"  # a full audit: it covers every batch
UNLINKED_NO_BATCH = "no batch"  # the page is about no batch (none new, or none said)


@dataclass(frozen=True)
class PageOrigin:
    """Where a page comes from: who wrote it (None: not said, as by a caller of the library),
    the pages of the other kind about the same batches written before it (`earlier`), and
    its row of the index (`index_row`), which lists those written after it too; or why it
    links to none (`unlinked`)."""

    written_by: Provenance | None
    earlier: LinkList
    index_row: str
    unlinked: str | None  # UNLINKED_FULL, UNLINKED_NO_BATCH, or None: it links by its batches


def page_origin(
    written_by: Provenance | None,
    linked: Sequence[Path],
    created: datetime,
    prefix: str,
    unlinked: str | None = None,
) -> PageOrigin:
    """The `PageOrigin` of the page of kind `prefix` written at `created`; `linked` are pages
    of the other kind (`links.linked`)."""
    other = RECONCILIATION_PREFIX if prefix == PAGE_PREFIX else PAGE_PREFIX
    row = index_anchor(Path(page_name(created, prefix)))
    return PageOrigin(written_by, link_list(linked, other), row, unlinked)


def _unlinked(scope: AuditScope | None) -> str | None:
    """Why an audit page links to no reconciliation page (None: it links by its scope)."""
    if scope_span(scope) is not None:
        return None
    return UNLINKED_FULL if scope is not None and scope.kind == FULL else UNLINKED_NO_BATCH


# --- A run's page --------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """The outcome of the run in counts (the template words it)."""

    passed: bool
    checks: int
    failed: int

    @property
    def state(self) -> str:
        """The CSS class of the verdict: "pass" or "fail"."""
        return "pass" if self.passed else "fail"


@dataclass(frozen=True)
class ScopeView:
    """Which kind of audit this was and the batches it covered, in words."""

    kind: str
    described: str
    full: bool


@dataclass(frozen=True)
class CheckView:
    """One check as a page shows it."""

    check: CheckResult
    suite_title: str
    link: Link | None
    failure: int | None  # its number among the failed checks (the anchor of its findings)

    @property
    def name(self) -> str:
        """The check's name."""
        return self.check.name

    @property
    def passed(self) -> bool:
        """Whether the check passed."""
        return self.check.passed

    @property
    def findings(self) -> tuple[str, ...]:
        """Every finding of the check."""
        return self.check.findings

    @property
    def first_finding(self) -> str:
        """The first finding ("" if none was given): what the check's row shows."""
        return self.check.findings[0] if self.check.findings else ""

    @property
    def shown_findings(self) -> tuple[str, ...]:
        """The findings a page lists: the first `MAX_FINDINGS`."""
        return self.check.findings[:MAX_FINDINGS]

    @property
    def more_findings(self) -> int:
        """How many findings are left out of the list."""
        return len(self.check.findings) - len(self.shown_findings)


@dataclass(frozen=True)
class SuiteView:
    """A suite's checks, in the order the audit ran them."""

    suite: str
    title: str
    checks: list[CheckView]

    @property
    def failed(self) -> list[CheckView]:
        """The suite's failed checks."""
        return [c for c in self.checks if not c.passed]

    @property
    def named_failures(self) -> list[CheckView]:
        """The failed checks its status tile names."""
        return self.failed[:TILE_FAILURES]

    @property
    def unnamed_failures(self) -> int:
        """How many failed checks its status tile only counts."""
        return len(self.failed) - len(self.named_failures)


@dataclass(frozen=True)
class ChainHead:
    """The newest batch: the head of the batch hash chain, and the Merkle roots it recorded."""

    batch: BatchRow
    roots: list[tuple[str, str]]  # (table, root), by table


@dataclass(frozen=True)
class BatchesView:
    """The batches an audit page is about: those the pipeline run before the audit added
    (`by_run`), or else those the audit covered; `span` None when there are none, `totals`
    their sums."""

    by_run: bool
    span: BatchSpan | None
    totals: Totals | None


def batches_view(run: RunBatches | None, scope: AuditScope | None) -> BatchesView | None:
    """Which batches an audit page is about: the run's (`run` given), else the scope's (None
    without a scope either); their sums not read yet (`store` reads them)."""
    if run is not None:
        return BatchesView(True, run.span, None)
    if scope is None:
        return None
    return BatchesView(False, BatchSpan.between(scope.first_batch, scope.last_batch), None)


def batches_summary(batches: BatchesView | None) -> dict[str, Any] | None:
    """What a page's summary keeps of its batches (the index's "added" column reads it)."""
    if batches is None:
        return None
    totals = batches.totals
    return {
        "by": "run" if batches.by_run else "scope",
        **(batches.span.to_dict() if batches.span else {"first_batch": None, "last_batch": None}),
        "batches": totals.batches if totals else 0,
        "events": totals.ingested if totals else 0,
    }


@dataclass(frozen=True)
class PageContext:
    """Everything a run's page shows."""

    written: datetime
    verdict: Verdict
    scope: ScopeView | None
    suites: list[SuiteView]  # in the order each suite first ran
    failures: list[CheckView]  # in the order the checks ran
    figures: list[tuple[str, int]]  # (label, value): the ledger's key figures
    chain_head: ChainHead | None  # None before the first batch
    view: LedgerView
    chart_data: dict[str, Any]  # what the page's script draws
    chart_grouped: bool  # whether a chart point stands for several consecutive batches
    origin: PageOrigin
    batches: BatchesView | None  # None: neither a pipeline run's nor an audit's scope is known


def page_context(
    report: AuditReport,
    view: LedgerView,
    created: datetime,
    *,
    written_by: Provenance | None = None,
    batches: BatchesView | None = None,
    linked: Sequence[Path] = (),
) -> PageContext:
    """What the page of `report` shows, with `view` of the ledger, written at `created` by
    `written_by`, about `batches`; `linked` are the reconciliation pages about them already
    written (`links.linked`)."""
    checks = _check_views(report.checks)
    failures = [c for c in checks if not c.passed]
    return PageContext(
        written=created,
        verdict=Verdict(report.passed, len(checks), len(failures)),
        scope=_scope_view(report.scope),
        suites=_by_suite(checks),
        failures=failures,
        figures=_figures(view),
        chain_head=_chain_head(view),
        view=view,
        chart_data=chart_data(view),
        chart_grouped=any(p.grouped for p in view.throughput),
        origin=page_origin(written_by, linked, created, PAGE_PREFIX, _unlinked(report.scope)),
        batches=batches,
    )


def _check_views(checks: Iterable[CheckResult]) -> list[CheckView]:
    """The checks in the order they ran, each failed one numbered in that order."""
    numbers = count()
    return [
        CheckView(
            check,
            suite_title(check.suite),
            safe_link(check),
            failure=None if check.passed else next(numbers),
        )
        for check in checks
    ]


def _by_suite(checks: Iterable[CheckView]) -> list[SuiteView]:
    """Checks grouped by suite, suites in the order they first appear."""
    grouped: dict[str, list[CheckView]] = {}
    for check in checks:
        grouped.setdefault(check.check.suite, []).append(check)
    return [SuiteView(suite, suite_title(suite), group) for suite, group in grouped.items()]


def _scope_view(scope: AuditScope | None) -> ScopeView | None:
    if scope is None:
        return None
    return ScopeView(scope.kind, scope.describe(), scope.kind == FULL)


def _figures(view: LedgerView) -> list[tuple[str, int]]:
    totals = view.totals
    return [
        ("batches", totals.batches),
        ("events ingested", totals.ingested),
        ("applied", totals.applied),
        ("rejected", totals.rejected),
        ("duplicates", totals.duplicates),
    ]


def _chain_head(view: LedgerView) -> ChainHead | None:
    if not view.latest:
        return None
    head = view.latest[0]
    roots = sorted(head.merkle_roots.items())
    return ChainHead(head, [(table, str(root)) for table, root in roots])


def chart_data(view: LedgerView) -> dict[str, Any]:
    """The numbers the page's script draws (static/charts.js reads these keys)."""
    return {
        "throughput": [
            {
                "first": p.first_batch,
                "last": p.last_batch,
                "events": p.events,
                "seconds": p.seconds,
                "rate": p.throughput,
            }
            for p in view.throughput
        ],
        "rejections": [{"reason": r, "events": n} for r, n in view.rejections],
    }


# --- The index -----------------------------------------------------------------------------


@dataclass(frozen=True)
class RunSummary:
    """A run's row of the index, from the summary written beside its page."""

    passed: bool
    failed: Any  # as read from the file: a count, or anything else (shown as "—")
    failed_suites: str  # the titles of the suites with a failed check, or ""
    counts: list[Any]  # the values of `INDEX_COUNTS`' keys, as read from the file
    audited: str
    written_by: str  # who wrote the page, in a line ("—" when its summary does not say)
    added: str  # the batches the pipeline run before the audit added, in words, or "—"


@dataclass(frozen=True)
class IndexRow:
    """One audit run in the index."""

    href: str
    time: str
    summary: RunSummary | None  # None for a page written without a summary
    anchor: str  # the row's id, which its page links to
    reconciliations: LinkList  # the reconciliation pages about the same batches


def index_rows(
    pages: Sequence[tuple[Path, Mapping[str, Any] | None]],
    reconciliations: Mapping[str, Sequence[Path]] | None = None,
) -> list[IndexRow]:
    """The index's rows, in the order of `pages`; `reconciliations` maps a page's name to
    the reconciliation pages it links to (`links.cross_links`)."""
    linked = reconciliations or {}
    return [
        IndexRow(
            page.name,
            _page_time(page),
            None if found is None else _run_summary(found),
            row_id(page),
            link_list(linked.get(page.name, ()), RECONCILIATION_PREFIX),
        )
        for page, found in pages
    ]


def _run_summary(summary: Mapping[str, Any]) -> RunSummary:
    suites = summary.get("failed_suites", [])
    return RunSummary(
        passed=summary["passed"],
        failed=summary.get("failed"),
        failed_suites=", ".join(suite_title(s) for s in suites),
        counts=[summary.get(key) for _, key in INDEX_COUNTS],
        audited=_audited(summary.get("audit")),
        written_by=written_by_text(summary),
        added=_added(summary.get("added")),
    )


def written_by_text(summary: Mapping[str, Any]) -> str:
    """An index cell: who wrote a page, from its summary (a summary written before pages
    said so may hold only an `origin` line)."""
    found = Provenance.from_dict(summary.get("written_by"))
    if found is not None:
        return found.describe()
    return str(summary.get("origin") or MISSING)


def _added(added: Any) -> str:
    """An index cell: the batches the pipeline run before the audit added."""
    if not isinstance(added, Mapping) or added.get("by") != "run":
        return MISSING
    span = BatchSpan.from_dict(added)
    if span is None:
        return "none"
    events = added.get("events")
    counted = f", {events:,} events" if isinstance(events, int) else ""
    return f"{span.describe()}{counted}"


def _page_time(page: Path, prefix: str = PAGE_PREFIX) -> str:
    """A page's time, from its name."""
    created = page_created(page, prefix)
    return utc_time(created) if created else page.stem


def _audited(scope: Mapping[str, Any] | None) -> str:
    """An index cell: the kind of audit and its batches."""
    if not scope:
        return MISSING
    if scope["kind"] == FULL:
        return "full"
    first, last = scope["first_batch"], scope["last_batch"]
    if last < first:
        return "batches: none new"
    return f"batch {first}" if first == last else f"batches {first}–{last}"
