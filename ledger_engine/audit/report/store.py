"""The folder of pages: each run's page and its summary, and the index rebuilt from them.

Pages are never overwritten, and the files that are rewritten (the index) are replaced
atomically, so that a browser or another run reading the folder meanwhile never sees half a
file.
"""

from __future__ import annotations

import json
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from ledger_engine.audit.findings import AuditReport
from ledger_engine.audit.report.naming import INDEX_NAME, PAGE_GLOB, page_name, summary_path
from ledger_engine.audit.report.queries import CHART_POINTS, TABLE_BATCHES, LedgerView, read_ledger
from ledger_engine.audit.report.render import render_index, render_page


def write_report(
    engine: Engine,
    report: AuditReport,
    reports_dir: Path,
    *,
    table_batches: int = TABLE_BATCHES,
    chart_points: int = CHART_POINTS,
) -> Path:
    """Write this audit run's page and its summary, refresh the index; return the page's path.

    `table_batches`: how many of the latest batches the batch table lists; `chart_points`: at
    most how many points the throughput chart has (see the package's docstring).
    """
    reports_dir.mkdir(parents=True, exist_ok=True)
    view = read_ledger(engine, table_batches=table_batches, chart_points=chart_points)
    page, created = _write_new_page(reports_dir, report, view)
    _atomic_write(summary_path(page), json.dumps(_summary(report, view, created)))
    _atomic_write(reports_dir / INDEX_NAME, render_index(_summaries(reports_dir)))
    return page


def latest_report(reports_dir: Path) -> Path | None:
    """The newest audit page in `reports_dir`, or None if there is none."""
    pages = sorted(reports_dir.glob(PAGE_GLOB)) if reports_dir.is_dir() else []
    return pages[-1] if pages else None


def _summary(report: AuditReport, view: LedgerView, created: datetime) -> dict[str, Any]:
    """A run's verdict and counts, kept beside its page for the index (`context.index_rows`
    reads these keys)."""
    return {
        "created": created.isoformat(),
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


def _summaries(reports_dir: Path) -> list[tuple[Path, dict[str, Any] | None]]:
    """Every page, newest first, with its summary (None for a page written without one)."""
    found = []
    for page in sorted(reports_dir.glob(PAGE_GLOB), reverse=True):
        try:
            read = json.loads(summary_path(page).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            read = None
        found.append((page, read))
    return found


def _write_new_page(
    reports_dir: Path, report: AuditReport, view: LedgerView
) -> tuple[Path, datetime]:
    """Write the page under a name made of the time, never over another run's page (even one
    of another process): the file is created exclusively, and a name taken means the clock
    has moved on by the next try."""
    while True:
        created = datetime.now(UTC)
        page = reports_dir / page_name(created)
        content = render_page(report, view, created)
        try:
            with page.open("x", encoding="utf-8") as out:
                out.write(content)
        except FileExistsError:
            continue
        return page, created


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
