"""What a reconciliation page and its row of the index show, derived from a
`ReconciliationView`.

The decisions live here (what a match rate counts, the order and titles of the reasons, the
age buckets, which amounts read as money, what the index keeps of a page); the template
`reconciliation.html` only lays them out and words them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

from ledger_engine.core.money import Unit
from ledger_engine.reconcile.matching import (
    AMOUNT_MISMATCH,
    DUPLICATE,
    MISSING_IN_LEDGER,
    MISSING_IN_STATEMENT,
    reason_words,
)
from ledger_engine.report.context import (
    UNLINKED_NO_BATCH,
    LinkList,
    PageOrigin,
    link_list,
    page_origin,
    written_by_text,
)
from ledger_engine.report.formats import MISSING, share_text, utc_time
from ledger_engine.report.links import row_id
from ledger_engine.report.naming import PAGE_PREFIX, RECONCILIATION_PREFIX, page_created
from ledger_engine.report.provenance import BatchSpan, Provenance
from ledger_engine.report.reconciliation_queries import (
    AGE_EDGES,
    DriftRow,
    OpenBreak,
    ReconciliationView,
    RunRow,
)

# The reasons a break may have (sql/0019's CHECK), in the order a page lists them; a reason
# not known here is listed after them under its own name.
_REASON_ORDER = (MISSING_IN_LEDGER, MISSING_IN_STATEMENT, AMOUNT_MISMATCH, DUPLICATE)


def age_labels(edges: Sequence[int] = AGE_EDGES) -> list[str]:
    """The age buckets' labels: ["< 1 day", "1–7 days", "7–30 days", "≥ 30 days"]."""
    labels = [f"< {_days(edges[0])}"]
    labels += [f"{low}–{high} days" for low, high in pairwise(edges)]
    return [*labels, f"≥ {_days(edges[-1])}"]


def _days(n: int) -> str:
    return f"{n} day" if n == 1 else f"{n} days"


@dataclass(frozen=True)
class SideShare:
    """One side's match rate: of the items considered, how many the matches took."""

    side: str  # "statement" or "ledger"
    title: str
    matched: int
    considered: int

    @property
    def open(self) -> int:
        """The items left in breaks."""
        return self.considered - self.matched

    @property
    def rate(self) -> str:
        """The match rate in per cent ("—" when nothing was considered)."""
        return share_text(self.matched, self.considered)


def _sides(runs: Sequence[RunRow]) -> list[SideShare]:
    return [
        SideShare(
            "statement",
            "statement entries",
            sum(r.statement_matched for r in runs),
            sum(r.statement_items for r in runs),
        ),
        SideShare(
            "ledger",
            "ledger entries",
            sum(r.ledger_matched for r in runs),
            sum(r.ledger_items for r in runs),
        ),
    ]


@dataclass(frozen=True)
class RunView:
    """One run of one source as the page shows it."""

    run: RunRow
    unit: Unit | None
    sides: list[SideShare]
    batches: str  # the batches it considered anew, in words

    @property
    def files(self) -> list[str]:
        """The statement files it considered anew, by name."""
        return [f.file_name for f in self.run.files]


def _run_view(run: RunRow, unit: Unit | None) -> RunView:
    first, last = run.after_batch + 1, run.through_batch
    if last < first:
        batches = f"none new (through batch {last:,})" if last >= 0 else "none committed"
    else:
        batches = f"batch {first:,}" if first == last else f"batches {first:,}–{last:,}"
    return RunView(run, unit, _sides([run]), batches)


@dataclass(frozen=True)
class ReasonRow:
    """Breaks of one reason: open now, and opened by these runs."""

    reason: str
    title: str
    open: int
    opened: int


def _reasons(view: ReconciliationView) -> list[ReasonRow]:
    open_by_reason: dict[str, int] = {}
    for (reason, _), breaks in view.open_by_reason_and_age.items():
        open_by_reason[reason] = open_by_reason.get(reason, 0) + breaks
    found = set(open_by_reason) | set(view.opened_by_reason)
    ordered = [*_REASON_ORDER, *sorted(found - set(_REASON_ORDER))]
    return [
        ReasonRow(
            reason,
            reason_words(reason),
            open_by_reason.get(reason, 0),
            view.opened_by_reason.get(reason, 0),
        )
        for reason in ordered
    ]


def _ages(view: ReconciliationView, edges: Sequence[int]) -> list[tuple[str, int]]:
    """(label, open breaks) per age bucket, youngest first."""
    counts = [0] * (len(edges) + 1)
    for (_, bucket), breaks in view.open_by_reason_and_age.items():
        counts[bucket] += breaks
    return list(zip(age_labels(edges), counts, strict=True))


@dataclass(frozen=True)
class BreakView:
    """An open break as the page lists it."""

    item: OpenBreak
    unit: Unit | None
    reason_title: str

    @property
    def reference(self) -> str:
        """What names it outside: the statement's reference, else the ledger's request id."""
        return self.item.statement_reference or self.item.request_id or MISSING


@dataclass(frozen=True)
class DriftView:
    """An account's drift as the page shows it."""

    row: DriftRow
    unit: Unit | None

    @property
    def drifting(self) -> bool:
        """Whether the statement and the ledger disagree."""
        return self.row.drift != 0

    @property
    def by_day(self) -> bool:
        """Whether the statement dates its balance by a day, not a date-time."""
        return _is_day(self.row.stated)

    @property
    def stated(self) -> str:
        """The statement's own date of the balance: "2026-12-07 (end of day)" for a day (it
        holds at the day's end), a date-time as the bank gave it, in its own offset."""
        if self.by_day:
            return f"{self.row.stated} (end of day)"
        moment = datetime.fromisoformat(self.row.stated)
        zone = "UTC" if not moment.utcoffset() else moment.isoformat()[-6:]  # "+01:00"
        return f"{moment.replace(tzinfo=None).isoformat(sep=' ')} {zone}"


def _is_day(stated: str) -> bool:
    return len(stated) == len("2026-12-07")


@dataclass(frozen=True)
class ReconciliationContext:
    """Everything a reconciliation page shows."""

    written: datetime
    origin: PageOrigin  # who wrote it, and the audits of the batches it read
    batches: BatchSpan | None  # the batches its runs read anew (None: none)
    read_at: datetime  # the moment the open breaks' ages are measured at
    runs: list[RunView]
    sources: list[str]
    sides: list[SideShare]  # statement, then ledger: over every run
    reasons: list[ReasonRow]
    ages: list[tuple[str, int]]  # (bucket label, open breaks)
    open_breaks: int
    opened: int
    closed: int  # written off included
    written_off: int  # of those closed, the write-offs settled
    oldest: list[BreakView]
    drift: list[DriftView]
    drift_accounts: int
    drifting_accounts: int
    drift_by_day: bool  # whether a balance listed is dated by a day (held at the day's end)
    units_unknown: list[str]  # sources whose amounts show in minor units
    chart_data: dict[str, Any]  # what the page's script draws

    @property
    def more_open(self) -> int:
        """How many open breaks the list of the oldest leaves out."""
        return self.open_breaks - len(self.oldest)


def reconciliation_context(
    view: ReconciliationView,
    created: datetime,
    *,
    written_by: Provenance,
    linked: Sequence[Path] = (),
    money: Mapping[str, Unit] | None = None,
    age_edges: Sequence[int] = AGE_EDGES,
) -> ReconciliationContext:
    """What the page of `view` shows, written at `created` by `written_by`; `linked` are
    the audit pages of the batches it read already written (`links.linked`); `money` gives
    each source's (currency, precision) where known."""
    units = dict(money or {})
    reasons = _reasons(view)
    ages = _ages(view, age_edges)
    sides = _sides(view.runs)
    batches = read_anew(view)
    unlinked = None if batches is not None else UNLINKED_NO_BATCH
    return ReconciliationContext(
        written=created,
        origin=page_origin(written_by, linked, created, RECONCILIATION_PREFIX, unlinked),
        batches=batches,
        read_at=view.read_at,
        runs=[_run_view(run, units.get(run.source)) for run in view.runs],
        sources=view.sources,
        sides=sides,
        reasons=reasons,
        ages=ages,
        open_breaks=sum(r.open for r in reasons),
        opened=sum(r.breaks_opened for r in view.runs),
        closed=sum(r.breaks_closed for r in view.runs),
        written_off=sum(r.written_off for r in view.runs),
        oldest=[BreakView(b, units.get(b.source), reason_words(b.reason)) for b in view.oldest],
        drift=[DriftView(d, units.get(d.source)) for d in view.drift],
        drift_accounts=view.drift_accounts,
        drifting_accounts=view.drifting_accounts,
        drift_by_day=any(_is_day(d.stated) for d in view.drift),
        units_unknown=[s for s in view.sources if s not in units],
        chart_data=chart_data(sides, reasons, ages),
    )


def chart_data(
    sides: Sequence[SideShare], reasons: Sequence[ReasonRow], ages: Sequence[tuple[str, int]]
) -> dict[str, Any]:
    """The numbers the page's script draws (static/charts.js reads these keys)."""
    return {
        "match_rate": [
            {"label": s.title, "matched": s.matched, "considered": s.considered} for s in sides
        ],
        "reasons": [{"label": r.title, "value": r.open} for r in reasons],
        "ages": [{"label": label, "value": n} for label, n in ages],
    }


def read_anew(view: ReconciliationView) -> BatchSpan | None:
    """The batches the runs read anew: after each source's previous run, through its own
    (one span: every run of one reconciliation reads through about the same newest batch)."""
    if not view.runs:
        return None
    first = min(run.after_batch + 1 for run in view.runs)
    return BatchSpan.between(first, max(run.through_batch for run in view.runs))


def reconciliation_summary(page: ReconciliationContext, run_ids: Sequence[int]) -> dict:
    """What the index keeps of a page, written beside it (`reconciliation_rows` and `links`
    read it)."""
    statement, ledger = page.sides
    written_by = page.origin.written_by
    return {
        "created": page.written.isoformat(),
        "written_by": written_by.to_dict() if written_by else None,
        "batches": page.batches.to_dict() if page.batches else None,
        "run_ids": sorted(run_ids),
        "sources": page.sources,
        "statement_matched": statement.matched,
        "statement_items": statement.considered,
        "ledger_matched": ledger.matched,
        "ledger_items": ledger.considered,
        "open_breaks": page.open_breaks,
        "breaks_opened": page.opened,
        "breaks_closed": page.closed,
        "written_off": page.written_off,
    }


# --- The index -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ReconciliationIndexRow:
    """One reconciliation in the index; `None` fields for a page written without a summary
    or a summary lacking them."""

    href: str
    time: str
    sources: str
    statement_rate: str
    ledger_rate: str
    open_breaks: Any  # as read from the file: a count, or anything else (shown as "—")
    opened: Any
    closed: Any
    written_off: Any  # of those closed; absent from a summary written before it was kept
    written_by: str
    anchor: str  # the row's id, which its page links to
    audits: LinkList  # the audit pages of the batches it read


def reconciliation_rows(
    pages: Sequence[tuple[Path, Mapping[str, Any] | None]],
    audits: Mapping[str, Sequence[Path]] | None = None,
) -> list[ReconciliationIndexRow]:
    """The index's rows of reconciliation pages, in the order of `pages`; `audits` maps a
    page's name to the audit pages it links to (`links.cross_links`)."""
    linked = audits or {}
    return [
        _index_row(page, found or {}, link_list(linked.get(page.name, ()), PAGE_PREFIX))
        for page, found in pages
    ]


def _index_row(page: Path, summary: Mapping[str, Any], audits: LinkList) -> ReconciliationIndexRow:
    created = page_created(page, RECONCILIATION_PREFIX)
    sources = summary.get("sources")
    return ReconciliationIndexRow(
        href=page.name,
        time=utc_time(created) if created else page.stem,
        sources=", ".join(map(str, sources)) if isinstance(sources, list) else MISSING,
        statement_rate=_rate(summary, "statement"),
        ledger_rate=_rate(summary, "ledger"),
        open_breaks=summary.get("open_breaks"),
        opened=summary.get("breaks_opened"),
        closed=summary.get("breaks_closed"),
        written_off=summary.get("written_off"),
        written_by=written_by_text(summary),
        anchor=row_id(page),
        audits=audits,
    )


def _rate(summary: Mapping[str, Any], side: str) -> str:
    matched, considered = summary.get(f"{side}_matched"), summary.get(f"{side}_items")
    if not (isinstance(matched, int) and isinstance(considered, int)):
        return MISSING
    return share_text(matched, considered)
