"""Which audit pages and reconciliation pages are about the same batches, and so link to each
other.

The rule: an audit page and a reconciliation page link to each other when a batch the audit
covered is one the reconciliation's ledger side read anew. So a reconciliation page leads to
the audits of the batches it matched against (were they sound?), and an audit page to the
reconciliations of the batches it proved (did the outside world agree?). The ledger's batches
are the one thing both kinds of page know and share, whoever wrote them: a pipeline DAG run
and a later `ledger_reconcile` run, or `ledger demo`, whose one run writes a batch audit of
the batches it added and then reconciles them.

- An audit's batches are the *batch audit*'s scope (the batches new since the last passing
  audit). A full audit covers every batch, so by this rule it would link to every
  reconciliation ever written; it links to none (the index lists it, by time).
- A reconciliation's batches are those its runs read anew, after each source's previous run
  through its own (`RunRow.after_batch` and `through_batch`): one span, since the runs of one
  reconciliation all read through about the same newest batch.

Pages are never overwritten, so a page can only link to the pages written before it: each
page lists those when it is written, and links to its own row of the index, which is rebuilt
after every page and lists every link of every page, both ways (`cross_links`). Every link is
a file name in the same folder (or the index's, with the row's anchor): the folder reads the
same offline, or copied elsewhere.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ledger_engine.audit.findings import BATCHES, AuditScope
from ledger_engine.report.naming import INDEX_NAME
from ledger_engine.report.provenance import BatchSpan

# (page, its summary or None), newest first: a folder's pages of one kind as `store` reads them.
Summaries = Sequence[tuple[Path, Mapping[str, Any] | None]]
SpanOf = Callable[[Mapping[str, Any]], BatchSpan | None]

LINKS_SHOWN = 10  # links a page or an index row lists; it counts the rest


def scope_span(scope: AuditScope | None) -> BatchSpan | None:
    """The batches an audit links by: its batch audit's scope (None for a full audit, an
    empty scope, or none said)."""
    if scope is None or scope.kind != BATCHES:
        return None
    return BatchSpan.between(scope.first_batch, scope.last_batch)


def audit_span(summary: Mapping[str, Any]) -> BatchSpan | None:
    """`scope_span` of an audit page, read from its summary (None for a summary without a
    scope, or one that is not what `store` writes)."""
    scope = summary.get("audit")
    if not isinstance(scope, Mapping) or scope.get("kind") != BATCHES:
        return None
    return BatchSpan.from_dict(scope)


def reconciliation_span(summary: Mapping[str, Any]) -> BatchSpan | None:
    """The batches a reconciliation page links by: those its runs read anew (None: none)."""
    return BatchSpan.from_dict(summary.get("batches"))


def linked(span: BatchSpan | None, pages: Summaries, span_of: SpanOf) -> list[Path]:
    """The pages among `pages` whose batches (`span_of` their summary) overlap `span`, in
    the order of `pages`."""
    if span is None:
        return []
    return [
        page
        for page, summary in pages
        if summary is not None and (other := span_of(summary)) is not None and other.overlaps(span)
    ]


def cross_links(
    audits: Summaries, reconciliations: Summaries
) -> tuple[dict[str, list[Path]], dict[str, list[Path]]]:
    """Every link between the two kinds of page, both ways: (audit page's name -> its
    reconciliation pages, reconciliation page's name -> its audit pages), each list in the
    order given (newest first).

    Cheap for a long history: the audits' spans are sorted by first batch, and a
    reconciliation's candidates are those starting no earlier than its first batch less the
    longest audit span (batch audits follow one another, so that window holds little more than
    the audits that overlap)."""
    spans = [
        (span, order, page)
        for order, (page, summary) in enumerate(audits)
        if summary is not None and (span := audit_span(summary)) is not None
    ]
    spans.sort(key=lambda found: found[0].first)
    firsts = [span.first for span, _, _ in spans]
    longest = max((span.batches for span, _, _ in spans), default=0)
    to_audits: dict[str, list[Path]] = {}
    to_reconciliations: dict[str, list[Path]] = {}
    for page, summary in reconciliations:
        span = reconciliation_span(summary) if summary is not None else None
        if span is None:
            continue
        window = spans[bisect_left(firsts, span.first - longest) : bisect_right(firsts, span.last)]
        found = sorted(
            ((order, audit) for other, order, audit in window if other.overlaps(span)),
            key=lambda hit: hit[0],
        )
        to_audits[page.name] = [audit for _, audit in found]
        for _, audit in found:
            to_reconciliations.setdefault(audit.name, []).append(page)
    return to_reconciliations, to_audits


def index_anchor(page: Path) -> str:
    """The link to `page`'s row of the index (beside it in the same folder)."""
    return f"{INDEX_NAME}#{row_id(page)}"


def row_id(page: Path) -> str:
    """The id of `page`'s row in the index: its name without the suffix."""
    return page.stem
