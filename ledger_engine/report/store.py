"""The folder of pages: each audit run's and each reconciliation's page and its summary, and
the index rebuilt from them.

Pages are never overwritten, and the files that are rewritten (the index) are replaced
atomically, so that a browser or another run reading the folder meanwhile never sees half a
file. The index is rebuilt under a lock on the folder, after the page and its summary are
written: of two writers (an audit and a reconciliation, say), the one that rebuilds last sees
both pages.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from ledger_engine.audit.findings import AuditReport
from ledger_engine.report.context import BatchesView, batches_summary, batches_view
from ledger_engine.report.links import linked, reconciliation_span, scope_span
from ledger_engine.report.naming import (
    INDEX_NAME,
    PAGE_GLOB,
    PAGE_PREFIX,
    RECONCILIATION_GLOB,
    page_name,
    summary_path,
)
from ledger_engine.report.provenance import Provenance, RunBatches
from ledger_engine.report.queries import (
    CHART_POINTS,
    TABLE_BATCHES,
    LedgerView,
    read_ledger,
    read_span,
)
from ledger_engine.report.render import render_index, render_page


def write_report(
    engine: Engine,
    report: AuditReport,
    reports_dir: Path,
    *,
    written_by: Provenance | None = None,
    run: RunBatches | None = None,
    table_batches: int = TABLE_BATCHES,
    chart_points: int = CHART_POINTS,
) -> Path:
    """Write this audit run's page and its summary, refresh the index; return the page's path.

    `written_by`: who wrote it (the entry point: a DAG run's task, a `ledger` command; None
    for a caller that does not say); `run`: the batches the pipeline run before the audit
    added, if a run came before it (else the page shows the batches the audit covered). The
    page links to the reconciliation pages already written about the batches it audited
    (`links`). `table_batches`: how many of the latest batches the batch table lists;
    `chart_points`: at most how many points the throughput chart has (see the package's
    docstring).
    """
    reports_dir.mkdir(parents=True, exist_ok=True)
    view = read_ledger(engine, table_batches=table_batches, chart_points=chart_points)
    batches = _batches(engine, report, run)
    reconciliations = read_summaries(reports_dir, RECONCILIATION_GLOB)
    earlier = linked(scope_span(report.scope), reconciliations, reconciliation_span)

    def render(created: datetime) -> str:
        return render_page(
            report, view, created, written_by=written_by, batches=batches, linked=earlier
        )

    page, created = write_new_page(reports_dir, PAGE_PREFIX, render)
    write_summary(page, _summary(report, view, created, written_by, batches))
    refresh_index(reports_dir)
    return page


def _batches(engine: Engine, report: AuditReport, run: RunBatches | None) -> BatchesView | None:
    """The batches the page is about (the run's, else the audit's scope), with their sums."""
    found = batches_view(run, report.scope)
    if found is None or found.span is None:
        return found
    return replace(found, totals=read_span(engine, found.span.first, found.span.last))


def write_summary(page: Path, summary: Mapping[str, Any]) -> None:
    """Keep `summary` beside `page`, for the index."""
    _atomic_write(summary_path(page), json.dumps(summary))


def refresh_index(reports_dir: Path) -> None:
    """Rebuild the index from every page in `reports_dir` and their summaries."""
    with _locked(reports_dir):
        index = render_index(
            read_summaries(reports_dir), read_summaries(reports_dir, RECONCILIATION_GLOB)
        )
        _atomic_write(reports_dir / INDEX_NAME, index)


def latest_report(reports_dir: Path) -> Path | None:
    """The newest audit page in `reports_dir`, or None if there is none."""
    pages = sorted(reports_dir.glob(PAGE_GLOB)) if reports_dir.is_dir() else []
    return pages[-1] if pages else None


def _summary(
    report: AuditReport,
    view: LedgerView,
    created: datetime,
    written_by: Provenance | None,
    batches: BatchesView | None,
) -> dict[str, Any]:
    """A run's verdict and counts, who wrote it and its batches, kept beside its page for the
    index (`context.index_rows` and `links` read these keys)."""
    return {
        "created": created.isoformat(),
        "written_by": written_by.to_dict() if written_by else None,
        "added": batches_summary(batches),
        "audit": report.scope.to_dict() if report.scope else None,
        "passed": report.passed,
        "checks": len(report.checks),
        "failed": len(report.failures()),
        "failed_suites": list(dict.fromkeys(c.suite for c in report.failures())),
        "batches": view.totals.batches,
        "ingested": view.totals.ingested,
        "applied": view.totals.applied,
        "rejected": view.totals.rejected,
        "duplicates": view.totals.duplicates,
    }


def read_summaries(
    reports_dir: Path, pattern: str = PAGE_GLOB
) -> list[tuple[Path, dict[str, Any] | None]]:
    """Every page of a kind (its file name `pattern`), newest first, with its summary (None
    for a page written without one)."""
    found = []
    for page in sorted(reports_dir.glob(pattern), reverse=True):
        try:
            read = json.loads(summary_path(page).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            read = None
        found.append((page, read))
    return found


def write_new_page(
    reports_dir: Path, prefix: str, render: Callable[[datetime], str]
) -> tuple[Path, datetime]:
    """Write the page `render(created)` under a name made of `prefix` and the time `created`,
    never over another run's page (even one of another process): the file is created
    exclusively, and a name taken means the clock has moved on by the next try."""
    while True:
        created = datetime.now(UTC)
        page = reports_dir / page_name(created, prefix)
        content = render(created)
        try:
            with page.open("x", encoding="utf-8") as out:
                out.write(content)
        except FileExistsError:
            continue
        return page, created


@contextmanager
def _locked(reports_dir: Path) -> Iterator[None]:
    """Hold the folder's lock (a hidden file in it) until the block ends."""
    with (reports_dir / ".index.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _atomic_write(path: Path, content: str) -> None:
    """Readers (a browser, another run's index) see the old file or the new one, never half."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, 0o644)  # mkstemp's 0600 would hide the index from a web server's user
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(content)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
