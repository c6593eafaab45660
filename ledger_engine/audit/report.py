"""The audit report: an HTML page per audit run, and an index of every run, newest first."""

from __future__ import annotations

import html
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import Engine, text

from ledger_engine.audit.findings import AuditReport, CheckResult

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem; color: #1d2430; }
table { border-collapse: collapse; margin: 1rem 0; }
th, td { border: 1px solid #ccd; padding: .3rem .6rem; text-align: right; }
th { background: #eef; } td.text { text-align: left; }
.pass { color: #17702f; font-weight: 600; } .fail { color: #b00020; font-weight: 600; }
"""


def write_report(engine: Engine, report: AuditReport, reports_dir: Path) -> Path:
    """Write this audit run's page and refresh the index; return the page's path."""
    reports_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    page = reports_dir / f"audit-{stamp}.html"
    page.write_text(_page(stamp, report, _batches(engine)), encoding="utf-8")
    _write_index(reports_dir)
    return page


def _batches(engine: Engine) -> list[dict]:
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT batch_id, events_ingested, applied, rejected, duplicates, changes,"
                " execute_seconds, committed_at FROM ledger_batches ORDER BY batch_id"
            )
        )
        return [dict(r._mapping) for r in rows]


def _check_row(check: CheckResult) -> str:
    status = (
        '<span class="pass">passed</span>' if check.passed else '<span class="fail">FAILED</span>'
    )
    findings = "<br>".join(html.escape(f) for f in check.findings)
    link = f' (<a href="{html.escape(check.link)}">details</a>)' if check.link else ""
    return (
        f'<tr><td class="text">{html.escape(check.suite)}</td>'
        f'<td class="text">{html.escape(check.name)}{link}</td>'
        f'<td>{status}</td><td class="text">{findings}</td></tr>'
    )


def _page(stamp: str, report: AuditReport, batches: list[dict]) -> str:
    verdict = (
        '<p class="pass">All audits passed.</p>'
        if report.passed
        else f'<p class="fail">{len(report.failures())} audit check(s) failed.</p>'
    )
    checks = "\n".join(_check_row(c) for c in report.checks)
    batch_rows = "\n".join(
        f"<tr><td>{b['batch_id']}</td><td>{b['events_ingested']}</td><td>{b['applied']}</td>"
        f"<td>{b['rejected']}</td><td>{b['duplicates']}</td><td>{b['changes']}</td>"
        f"<td>{b['execute_seconds']:.3f}</td>"
        f'<td class="text">{html.escape(str(b["committed_at"]))}</td></tr>'
        for b in batches
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Ledger audit {stamp}</title>
<style>{_STYLE}</style></head><body>
<h1>Ledger audit {stamp}</h1>
{verdict}
<h2>Checks</h2>
<table><tr><th>suite</th><th>check</th><th>outcome</th><th>first findings</th></tr>
{checks}
</table>
<h2>Committed batches</h2>
<table><tr><th>batch</th><th>ingested</th><th>applied</th><th>rejected</th><th>duplicates</th>
<th>row writes</th><th>execute s</th><th>committed at</th></tr>
{batch_rows}
</table>
<p><a href="index.html">All audit runs</a></p>
</body></html>
"""


def _write_index(reports_dir: Path) -> None:
    pages = sorted(reports_dir.glob("audit-*.html"), reverse=True)
    items = "\n".join(f'<li><a href="{p.name}">{html.escape(p.stem)}</a></li>' for p in pages)
    (reports_dir / "index.html").write_text(
        f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Ledger audits</title>
<style>{_STYLE}</style></head><body><h1>Ledger audits, newest first</h1>
<ul>{items}</ul></body></html>
""",
        encoding="utf-8",
    )
