"""The audit report: an HTML page per audit run, and an index of every run, newest first.

A page is one self-contained file that reads the same offline: its style and its one script
are inline, and a Content Security Policy that names their hashes, and nothing else, keeps the
browser from loading anything from anywhere (no CDN, no fonts, no images). From the top:

- the verdict, which kind of audit it was (the batch audit of a range of batches, or the full
  audit), a status tile per check suite (Merkle roots and batch hash chain, Great
  Expectations, replay, pipeline, or any suite a later audit adds) and the ledger's key
  figures, with the head of the batch hash chain (its hash and Merkle roots);
- the first findings of every failed check;
- two charts, drawn as SVG by the inline script from data embedded as JSON: throughput over
  batches, and rejections by reason; each has a table of the same numbers under it, for a
  reader without JavaScript and for copying into a spreadsheet;
- every check, grouped by suite, with its outcome and its link (Great Expectations' Data Docs);
- the latest batches, one row each: applied, rejected, duplicates, throughput, commit latency.

Large ledgers: the batch table lists the latest `TABLE_BATCHES` batches and a totals row over
all of them; the throughput chart covers every batch in at most `CHART_POINTS` points, past
which consecutive batches are grouped (a group's throughput is its events over its seconds).
So a page stays about the same size whatever the ledger's length.

Throughput of a batch is its ingested events over its execute seconds plus its commit seconds
(Spark's execution, then the commit transaction up to the batch row). Batches committed before
commit latency was recorded (sql/0010) read 0 commit seconds, shown as "not measured".

Beside each page, `audit-<stamp>.json` holds its verdict and counts, from which the index
is rebuilt after every run.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import Connection, Engine, text

from ledger_engine.audit.findings import FULL, AuditReport, CheckResult

TABLE_BATCHES = 50  # the latest batches listed one per row
CHART_POINTS = 500  # at most this many points in the throughput chart
MAX_FINDINGS = 10  # findings shown per failed check
PAGE_PREFIX = "audit-"
INDEX_NAME = "index.html"
_STAMP_FORMAT = "%Y%m%dT%H%M%S%fZ"  # sorts as it reads: the newest page's name is the greatest

# Friendlier titles of the suites this platform runs; any other suite shows under its own name.
_SUITE_TITLES = {
    "merkle": "Merkle roots & hash chain",
    "great_expectations": "Great Expectations",
    "replay": "Replay",
    "pipeline": "Pipeline run",
}
_LINK_TEXTS = {"great_expectations": "Data Docs"}
_LINK_SCHEMES = ("", "file", "http", "https")  # never javascript: or data:


# --- What the ledger holds ---------------------------------------------------------------


@dataclass(frozen=True)
class BatchRow:
    """One committed batch, as the report shows it."""

    batch_id: int
    committed_at: datetime
    ingested: int
    applied: int
    rejected: int
    duplicates: int
    changes: int
    execute_seconds: float
    commit_seconds: float
    batch_hash: str
    merkle_roots: Mapping[str, str]

    @property
    def throughput(self) -> float | None:
        """Events per second over execute and commit; None if no time was measured."""
        return _rate(self.ingested, self.execute_seconds + self.commit_seconds)


@dataclass(frozen=True)
class ThroughputPoint:
    """Consecutive batches `first_batch`..`last_batch`, summed (one batch when not grouped)."""

    first_batch: int
    last_batch: int
    events: int
    seconds: float

    @property
    def throughput(self) -> float | None:
        return _rate(self.events, self.seconds)


@dataclass(frozen=True)
class Totals:
    """Sums over every committed batch."""

    batches: int
    ingested: int
    applied: int
    rejected: int
    duplicates: int
    changes: int


@dataclass(frozen=True)
class LedgerView:
    """What a page shows of the system of record, read in one snapshot."""

    totals: Totals
    latest: list[BatchRow]  # newest first
    throughput: list[ThroughputPoint]  # oldest first
    rejections: list[tuple[str, int]]  # (reason, events), most frequent first


def _rate(events: int, seconds: float) -> float | None:
    return events / seconds if seconds > 0 else None


_TOTALS_SQL = text(
    "SELECT count(*) AS batches, coalesce(sum(events_ingested), 0) AS ingested,"
    " coalesce(sum(applied), 0) AS applied, coalesce(sum(rejected), 0) AS rejected,"
    " coalesce(sum(duplicates), 0) AS duplicates, coalesce(sum(changes), 0) AS changes"
    " FROM ledger_batches"
)
_LATEST_SQL = text(
    "SELECT batch_id, committed_at, events_ingested AS ingested, applied, rejected, duplicates,"
    " changes, execute_seconds, commit_seconds, batch_hash, merkle_roots"
    " FROM ledger_batches ORDER BY batch_id DESC LIMIT :limit"
)
# Batch ids are consecutive from 0 (the commit refuses gaps), so `batch_id / :width` makes
# groups of `width` consecutive batches.
_THROUGHPUT_SQL = text(
    "SELECT min(batch_id) AS first_batch, max(batch_id) AS last_batch,"
    " sum(events_ingested) AS events, sum(execute_seconds + commit_seconds) AS seconds"
    " FROM ledger_batches GROUP BY batch_id / :width ORDER BY first_batch"
)
# A function's failure reads `function_error: <ExceptionType>: <message>`: one reason, many texts.
_REJECTIONS_SQL = text(
    "SELECT split_part(reason, ':', 1) AS reason, count(*) AS events FROM ledger_rejections"
    " GROUP BY 1 ORDER BY 2 DESC, 1"
)


def read_ledger(
    engine: Engine, *, table_batches: int = TABLE_BATCHES, chart_points: int = CHART_POINTS
) -> LedgerView:
    """Read what a page shows, in one repeatable-read snapshot (a batch committing meanwhile
    shows in none of the numbers, or in all of them)."""
    with engine.connect() as conn:
        conn = conn.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin():
            totals = Totals(**conn.execute(_TOTALS_SQL).one()._mapping)
            latest = [
                BatchRow(**row._mapping)
                for row in conn.execute(_LATEST_SQL, {"limit": max(table_batches, 1)})
            ]
            return LedgerView(
                totals=totals,
                latest=latest,
                throughput=_throughput(conn, totals.batches, chart_points),
                rejections=[(r.reason, r.events) for r in conn.execute(_REJECTIONS_SQL)],
            )


def _throughput(conn: Connection, batches: int, chart_points: int) -> list[ThroughputPoint]:
    width = max(1, math.ceil(batches / max(chart_points, 1)))
    return [
        ThroughputPoint(**row._mapping) for row in conn.execute(_THROUGHPUT_SQL, {"width": width})
    ]


# --- Writing the pages ---------------------------------------------------------------------


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
    most how many points the throughput chart has (see the module docstring).
    """
    reports_dir.mkdir(parents=True, exist_ok=True)
    view = read_ledger(engine, table_batches=table_batches, chart_points=chart_points)
    page, created = _write_new_page(reports_dir, report, view)
    _atomic_write(page.with_suffix(".json"), json.dumps(_summary(report, view, created)))
    _atomic_write(reports_dir / INDEX_NAME, render_index(_summaries(reports_dir)))
    return page


def latest_report(reports_dir: Path) -> Path | None:
    """The newest audit page in `reports_dir`, or None if there is none."""
    pages = sorted(reports_dir.glob(f"{PAGE_PREFIX}*.html")) if reports_dir.is_dir() else []
    return pages[-1] if pages else None


def _write_new_page(
    reports_dir: Path, report: AuditReport, view: LedgerView
) -> tuple[Path, datetime]:
    """Write the page under a name made of the time, never over another run's page (even one
    of another process): the file is created exclusively, and a name taken means the clock
    has moved on by the next try."""
    while True:
        created = datetime.now(UTC)
        page = reports_dir / f"{PAGE_PREFIX}{created.strftime(_STAMP_FORMAT)}.html"
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


def _summary(report: AuditReport, view: LedgerView, created: datetime) -> dict[str, Any]:
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
    for page in sorted(reports_dir.glob(f"{PAGE_PREFIX}*.html"), reverse=True):
        try:
            summary = json.loads(page.with_suffix(".json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            summary = None
        found.append((page, summary))
    return found


# --- Page parts ----------------------------------------------------------------------------

_STYLE = """
:root { --ink: #1b2533; --muted: #5b6677; --line: #dfe4ec; --paper: #f6f8fb; --navy: #1f4e79;
  --ok: #17703a; --ok-bg: #e8f5ec; --bad: #b3261e; --bad-bg: #fdecea; --warn: #9a5b13; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--paper); color: var(--ink); font-size: 15px; line-height: 1.5;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1120px; margin: 0 auto; padding: 1.5rem 1.5rem 3rem; }
header { display: flex; justify-content: space-between; align-items: baseline; flex-wrap: wrap; }
h1 { font-size: 1.6rem; margin: 0 0 .25rem; } h2 { font-size: 1.2rem; margin: 2rem 0 .6rem; }
h3 { font-size: 1rem; margin: 1.2rem 0 .4rem; }
a { color: var(--navy); }
.muted { color: var(--muted); font-size: .9rem; }
.verdict { border-radius: 8px; padding: .8rem 1.1rem; font-size: 1.1rem; font-weight: 600;
  margin: 1rem 0; }
.verdict .detail { font-weight: 400; font-size: 1rem; }
.verdict.pass { background: var(--ok-bg); color: var(--ok); border: 1px solid #b7dfc4; }
.verdict.fail { background: var(--bad-bg); color: var(--bad); border: 1px solid #f2b8b5; }
.tiles { display: grid; grid-template-columns: repeat(auto-fill, minmax(190px, 1fr));
  gap: .8rem; }
.tile { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: .8rem 1rem;
  border-top: 4px solid var(--line); }
.tile.pass { border-top-color: var(--ok); } .tile.fail { border-top-color: var(--bad); }
.tile h3 { margin: 0 0 .3rem; font-size: .95rem; color: var(--muted); font-weight: 600; }
.tile .state { font-size: 1.3rem; font-weight: 700; }
.tile.pass .state { color: var(--ok); } .tile.fail .state { color: var(--bad); }
.tile ul { margin: .3rem 0 0; padding-left: 1.1rem; font-size: .9rem; }
.figure { font-size: 1.3rem; font-weight: 700; font-variant-numeric: tabular-nums; }
.panel { background: #fff; border: 1px solid var(--line); border-radius: 8px;
  padding: 1rem 1.2rem; margin: .8rem 0; }
.failure { border-left: 4px solid var(--bad); }
.failure h3 { margin-top: 0; color: var(--bad); }
.failure ol { margin: .3rem 0; padding-left: 1.4rem; }
code, .hash { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace;
  font-size: .85rem; overflow-wrap: anywhere; }
table { border-collapse: collapse; width: 100%; background: #fff; font-size: .9rem; }
th, td { padding: .4rem .6rem; border-bottom: 1px solid var(--line); text-align: left;
  vertical-align: top; }
th { background: #eef2f7; font-weight: 600; white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.total td { font-weight: 700; border-top: 2px solid var(--ink); }
.outcome.pass { color: var(--ok); font-weight: 600; }
.outcome.fail { color: var(--bad); font-weight: 700; }
table.checks { table-layout: fixed; }
table.checks th:nth-child(1) { width: 38%; } table.checks th:nth-child(2) { width: 10%; }
table.checks th:nth-child(4) { width: 12%; }
.charts { display: grid; grid-template-columns: 1fr; gap: 1rem; }
.chart { min-height: 4rem; }
.chart svg { width: 100%; height: auto; display: block; }
.chart .grid { stroke: #e6eaf0; stroke-width: 1; }
.chart .axis { fill: var(--muted); font-size: 11px; }
.chart .line { fill: none; stroke: var(--navy); stroke-width: 2; }
.chart .point { fill: var(--navy); }
.chart .bar { fill: #c05a2b; }
.chart .label { fill: var(--ink); font-size: 12px; }
.chart .value { fill: var(--ink); font-size: 12px; font-weight: 600; }
.empty { color: var(--muted); font-style: italic; }
details { margin-top: .6rem; } summary { cursor: pointer; color: var(--muted); }
footer { margin-top: 2.5rem; color: var(--muted); font-size: .85rem; }
"""

# Draws the charts from the JSON in #report-data; marks <body data-charts="drawn"> once done,
# so that a browser test can tell the script ran to its end. Writes nothing to the console.
_SCRIPT = """
(() => {
  "use strict";
  const SVG = "http://www.w3.org/2000/svg";
  const data = JSON.parse(document.getElementById("report-data").textContent);
  // Whole numbers, but a slow batch's 0.4 events/s must not read as 0.
  const fmt = (n, top = n) =>
    n.toLocaleString("en-US", { maximumFractionDigits: top < 10 ? 2 : top < 100 ? 1 : 0 });

  function node(name, attrs, parent, label) {
    const el = document.createElementNS(SVG, name);
    for (const [key, value] of Object.entries(attrs)) el.setAttribute(key, String(value));
    if (label !== undefined) el.textContent = label;
    parent.appendChild(el);
    return el;
  }
  function canvas(box, width, height, label) {
    box.textContent = "";
    const viewBox = `0 0 ${width} ${height}`;
    return node("svg", { viewBox, role: "img", "aria-label": label }, box);
  }
  function empty(box, message) {
    box.textContent = "";
    const p = document.createElement("p");
    p.className = "empty";
    p.textContent = message;
    box.appendChild(p);
  }
  function niceTop(value) {
    if (!(value > 0)) return 1;
    const power = Math.pow(10, Math.floor(Math.log10(value)));
    for (const step of [1, 2, 2.5, 5, 10]) if (step * power >= value) return step * power;
    return 10 * power;
  }
  const span = (p) => (p.first === p.last ? `batch ${p.first}` : `batches ${p.first}-${p.last}`);

  function drawThroughput(box, points) {
    const shown = points.filter((p) => p.rate !== null);
    if (!shown.length) return empty(box, "No batch with a measured duration yet.");
    const W = 760, H = 260, L = 72, R = 18, T = 14, B = 40;
    const svg = canvas(box, W, H, "Throughput over batches, events per second");
    const top = niceTop(Math.max(...shown.map((p) => p.rate)));
    const step = shown.length === 1 ? 0 : (W - L - R) / (shown.length - 1);
    const x = (i) => (shown.length === 1 ? (L + W - R) / 2 : L + i * step);
    const y = (v) => T + (H - T - B) * (1 - v / top);
    for (let k = 0; k <= 4; k++) {
      const v = (top * k) / 4;
      node("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: "grid" }, svg);
      const tick = { x: L - 8, y: y(v) + 4, "text-anchor": "end", class: "axis" };
      node("text", tick, svg, fmt(v, top));
    }
    const ticks = new Set([0, shown.length - 1]);
    for (let k = 1; k < 5; k++) ticks.add(Math.round((k * (shown.length - 1)) / 5));
    for (const i of ticks) {
      node("text", { x: x(i), y: H - B + 18, "text-anchor": "middle", class: "axis" }, svg,
        String(shown[i].first));
    }
    node("text", { x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle", class: "axis" }, svg,
      "batch");
    node("text", { x: 12, y: T + (H - T - B) / 2, "text-anchor": "middle", class: "axis",
      transform: `rotate(-90 12 ${T + (H - T - B) / 2})` }, svg, "events / s");
    const line = shown.map((p, i) => `${x(i)},${y(p.rate)}`).join(" ");
    node("polyline", { points: line, class: "line" }, svg);
    const radius = shown.length > 120 ? 1.5 : 4;
    shown.forEach((p, i) => {
      const dot = node("circle", { cx: x(i), cy: y(p.rate), r: radius, class: "point" }, svg);
      node("title", {}, dot, `${span(p)}: ${fmt(p.rate)} events/s`);
    });
  }

  function drawRejections(box, reasons) {
    if (!reasons.length) return empty(box, "No event has been rejected.");
    const W = 760, ROW = 30, L = 170, R = 90, T = 6;
    const svg = canvas(box, W, 2 * T + ROW * reasons.length, "Rejected events by reason");
    const top = Math.max(...reasons.map((r) => r.events));
    reasons.forEach((r, i) => {
      const middle = T + i * ROW + ROW / 2;
      const width = Math.max(2, ((W - L - R) * r.events) / top);
      const label = { x: L - 10, y: middle + 4, "text-anchor": "end", class: "label" };
      node("text", label, svg, r.reason);
      const shape = { x: L, y: middle - 10, width, height: 20, rx: 3, class: "bar" };
      const bar = node("rect", shape, svg);
      node("title", {}, bar, `${r.reason}: ${fmt(r.events)} events`);
      node("text", { x: L + width + 8, y: middle + 4, class: "value" }, svg, fmt(r.events));
    });
  }

  drawThroughput(document.getElementById("throughput-chart"), data.throughput);
  drawRejections(document.getElementById("rejections-chart"), data.rejections);
  document.body.dataset.charts = "drawn";
})();
"""


def _csp_hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode() + "'"


# Only this style and this script may run: nothing is fetched, no other script executes.
_PAGE_POLICY = (
    f"default-src 'none'; style-src {_csp_hash(_STYLE)}; script-src {_csp_hash(_SCRIPT)};"
    " base-uri 'none'; form-action 'none'"
)
_INDEX_POLICY = f"default-src 'none'; style-src {_csp_hash(_STYLE)}; base-uri 'none'"


def render_page(report: AuditReport, view: LedgerView, created: datetime) -> str:
    """The HTML of one audit run's page."""
    when = _when(created)
    return _document(
        f"Ledger audit {when}",
        _PAGE_POLICY,
        "\n".join(
            (
                "<header><div><h1>Ledger audit</h1>"
                f'<div class="muted">Written {html.escape(when)}</div></div>'
                f'<a href="{INDEX_NAME}">All audit runs</a></header>',
                _verdict(report),
                _scope(report),
                _status(report, view),
                _failures(report),
                _charts(view),
                _checks(report),
                _batch_table(view),
                f'<footer>Every audit run: <a href="{INDEX_NAME}">index</a>.</footer>',
                '<script type="application/json" id="report-data">'
                f"{_json_for_html(_chart_data(view))}</script>",
                f"<script>{_SCRIPT}</script>",
            )
        ),
    )


def render_index(pages: Sequence[tuple[Path, Mapping[str, Any] | None]]) -> str:
    """The HTML of the index: one row per page (newest first, as given)."""
    head = (
        "<tr><th>audit run</th><th>verdict</th><th class=num>checks</th>"
        "<th class=num>batches</th><th class=num>events</th><th class=num>applied</th>"
        "<th class=num>rejected</th><th class=num>duplicates</th><th>audited</th></tr>"
    )
    rows = "\n".join(_index_row(page, summary) for page, summary in pages)
    body = (
        "<header><div><h1>Ledger audits</h1>"
        f'<div class="muted">{len(pages):,} audit runs, newest first</div></div></header>'
        f'<table id="runs"><thead>{head}</thead><tbody>\n{rows}\n</tbody></table>'
    )
    return _document("Ledger audits", _INDEX_POLICY, body)


def _document(title: str, policy: str, body: str) -> str:
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{html.escape(policy)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<style>{_STYLE}</style></head>
<body><main>
{body}
</main></body></html>
"""


def _index_row(page: Path, summary: Mapping[str, Any] | None) -> str:
    link = f'<a href="{html.escape(page.name)}">{html.escape(_page_time(page))}</a>'
    if summary is None:
        return f"<tr><td>{link}</td>" + "<td>—</td>" * 8 + "</tr>"
    if summary["passed"]:
        verdict = '<span class="outcome pass">passed</span>'
    else:
        suites = ", ".join(_suite_title(s) for s in summary.get("failed_suites", []))
        verdict = (
            f'<span class="outcome fail">{_count_text(summary.get("failed"))} failed</span>'
            + (f' <span class="muted">({html.escape(suites)})</span>' if suites else "")
        )
    numbers = "".join(
        f"<td class=num>{_count_text(summary.get(key))}</td>"
        for key in ("checks", "batches", "ingested", "applied", "rejected", "duplicates")
    )
    audited = html.escape(_audited(summary.get("audit")))
    return f"<tr><td>{link}</td><td>{verdict}</td>{numbers}<td>{audited}</td></tr>"


def _audited(scope: Mapping[str, Any] | None) -> str:
    """An index cell: the kind of audit and its batches."""
    if not scope:
        return "—"
    if scope["kind"] == FULL:
        return "full"
    first, last = scope["first_batch"], scope["last_batch"]
    if last < first:
        return "batches: none new"
    return f"batch {first}" if first == last else f"batches {first}–{last}"


def _verdict(report: AuditReport) -> str:
    # The first sentence is also what logs and tests search for: keep it as it is.
    total = len(report.checks)
    if report.passed:
        headline, detail = "All audits passed.", f"{_all(total)} passed."
    elif not report.checks:
        headline, detail = "No audit check ran.", "There is nothing to vouch for this ledger."
    else:
        failed = len(report.failures())
        headline = f"{failed:,} audit check(s) failed."
        detail = f"{failed:,} of {_count(total, 'check')}; the first findings are below."
    state = "pass" if report.passed else "fail"
    return (
        f'<div class="verdict {state}" id="verdict">{headline}'
        f' <span class="detail">{detail}</span></div>'
    )


def _scope(report: AuditReport) -> str:
    """Which kind of audit this was and the batches it covered."""
    scope = report.scope
    if scope is None:
        return ""
    if scope.kind == FULL:
        meaning = (
            "Every table's Merkle tree recomputed from its rows and every rule over the whole "
            "ledger."
        )
    else:
        meaning = (
            "The batches before these were proven by earlier audits; the hash chain and the "
            "Merkle roots tie these to them. A row changed behind the engine's back in an "
            "earlier batch is the full audit's to find (<code>ledger audit --full</code>, the "
            "daily DAG)."
        )
    return (
        f'<div class="panel" id="audit-scope" data-kind="{html.escape(scope.kind)}">'
        f"<strong>{html.escape(scope.describe())}.</strong> {meaning}</div>"
    )


def _by_suite(checks: Iterable[CheckResult]) -> dict[str, list[CheckResult]]:
    """Checks grouped by suite, suites in the order they first appear."""
    grouped: dict[str, list[CheckResult]] = {}
    for check in checks:
        grouped.setdefault(check.suite, []).append(check)
    return grouped


def _suite_title(suite: str) -> str:
    return _SUITE_TITLES.get(suite, suite.replace("_", " ").capitalize())


def _status(report: AuditReport, view: LedgerView) -> str:
    tiles = [_suite_tile(suite, checks) for suite, checks in _by_suite(report.checks).items()]
    totals = view.totals
    figures = (
        ("batches", totals.batches),
        ("events ingested", totals.ingested),
        ("applied", totals.applied),
        ("rejected", totals.rejected),
        ("duplicates", totals.duplicates),
    )
    figure_tiles = "".join(
        f'<div class="tile"><h3>{label}</h3><div class="figure">{value:,}</div></div>'
        for label, value in figures
    )
    return (
        '<h2>Status</h2><div class="tiles" id="suites">'
        + "".join(tiles)
        + "</div>"
        + '<h2>Ledger</h2><div class="tiles" id="figures">'
        + figure_tiles
        + "</div>"
        + _chain_head(view)
    )


def _suite_tile(suite: str, checks: list[CheckResult]) -> str:
    failed = [c for c in checks if not c.passed]
    state, label = ("fail", "FAILED") if failed else ("pass", "passed")
    count = (
        f"{len(failed):,} of {_count(len(checks), 'check')} failed"
        if failed
        else f"{_all(len(checks), 'check')} passed"
    )
    names = "".join(f"<li>{html.escape(c.name)}</li>" for c in failed[:5])
    more = f"<li>and {len(failed) - 5:,} more</li>" if len(failed) > 5 else ""
    listed = f"<ul>{names}{more}</ul>" if failed else ""
    return (
        f'<div class="tile {state}" data-suite="{html.escape(suite)}">'
        f"<h3>{html.escape(_suite_title(suite))}</h3>"
        f'<div class="state">{label}</div><div class="muted">{count}</div>{listed}</div>'
    )


def _chain_head(view: LedgerView) -> str:
    if not view.latest:
        return '<div class="panel" id="chain-head">No batch has been committed yet.</div>'
    head = view.latest[0]
    roots = "".join(
        f"<tr><td>{html.escape(table)}</td><td class=hash>{html.escape(str(root))}</td></tr>"
        for table, root in sorted(head.merkle_roots.items())
    )
    return (
        '<div class="panel" id="chain-head"><h3>Head of the batch hash chain</h3>'
        f"<p>Batch {head.batch_id:,}, committed {html.escape(_when(head.committed_at))}: "
        f'<span class="hash">{html.escape(head.batch_hash)}</span></p>'
        '<table id="merkle-roots"><thead><tr><th>table</th>'
        "<th>Merkle root recorded by the engine</th></tr>"
        f"</thead><tbody>{roots}</tbody></table></div>"
    )


def _failures(report: AuditReport) -> str:
    failures = report.failures()
    if not failures:
        return ""
    return (
        '<h2>What failed</h2><div id="failures">'
        + "".join(_failure(i, c) for i, c in enumerate(failures))
        + "</div>"
    )


def _failure(number: int, check: CheckResult) -> str:
    shown = check.findings[:MAX_FINDINGS]
    items = "".join(f"<li>{html.escape(f)}</li>" for f in shown)
    rest = len(check.findings) - len(shown)
    more = f'<p class="muted">and {rest:,} more findings</p>' if rest > 0 else ""
    findings = f"<ol>{items}</ol>{more}" if shown else '<p class="muted">No finding given.</p>'
    link = _link(check)
    return (
        f'<article class="panel failure" id="failure-{number}">'
        f"<h3>{html.escape(_suite_title(check.suite))}: {html.escape(check.name)}</h3>"
        f"{findings}{f'<p>{link}</p>' if link else ''}</article>"
    )


def _link(check: CheckResult) -> str:
    if not check.link or urlsplit(check.link).scheme.lower() not in _LINK_SCHEMES:
        return ""
    label = _LINK_TEXTS.get(check.suite, "details")
    return f'<a href="{html.escape(check.link)}">{label}</a>'


def _checks(report: AuditReport) -> str:
    failure_numbers = {id(c): i for i, c in enumerate(report.failures())}
    sections = []
    for suite, checks in _by_suite(report.checks).items():
        rows = "".join(_check_row(c, failure_numbers.get(id(c))) for c in checks)
        sections.append(
            f'<section class="suite" data-suite="{html.escape(suite)}">'
            f"<h3>{html.escape(_suite_title(suite))}</h3>"
            '<table class="checks"><thead><tr><th>check</th><th>outcome</th><th>first finding</th>'
            "<th>more</th>"
            f"</tr></thead><tbody>{rows}</tbody></table></section>"
        )
    return '<h2>Checks</h2><div id="checks">' + "".join(sections) + "</div>"


def _check_row(check: CheckResult, failure: int | None) -> str:
    if check.passed:
        outcome, findings = '<span class="outcome pass">passed</span>', ""
    else:
        outcome = '<span class="outcome fail">FAILED</span>'
        first = html.escape(check.findings[0]) if check.findings else ""
        findings = (
            f'<a href="#failure-{failure}">{first or "see above"}</a>'
            f' <span class="muted">({_count(len(check.findings), "finding")})</span>'
        )
    return (
        f"<tr><td>{html.escape(check.name)}</td><td>{outcome}</td>"
        f"<td>{findings}</td><td>{_link(check)}</td></tr>"
    )


def _charts(view: LedgerView) -> str:
    return (
        '<h2>Throughput and rejections</h2><div class="charts">'
        '<div class="panel"><h3>Throughput over batches (events per second)</h3>'
        '<div class="chart" id="throughput-chart"><p class="empty">The chart needs JavaScript;'
        " its numbers are in the table below.</p></div>"
        f"{_throughput_table(view)}</div>"
        '<div class="panel"><h3>Rejected events by reason, every batch</h3>'
        '<div class="chart" id="rejections-chart"><p class="empty">The chart needs JavaScript;'
        " its numbers are in the table below.</p></div>"
        f"{_rejections_table(view)}</div></div>"
    )


def _throughput_table(view: LedgerView) -> str:
    grouped = any(p.first_batch != p.last_batch for p in view.throughput)
    rows = "".join(
        f"<tr><td>{_span(p)}</td><td class=num>{p.events:,}</td>"
        f"<td class=num>{p.seconds:,.3f}</td><td class=num>{_rate_text(p.throughput)}</td></tr>"
        for p in view.throughput
    )
    note = " (consecutive batches grouped to keep the chart readable)" if grouped else ""
    return (
        f"<details><summary>The numbers{note}</summary>"
        '<table id="throughput-table"><thead><tr><th>batches</th><th class=num>events</th>'
        "<th class=num>seconds</th><th class=num>events / s</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></details>"
    )


def _rejections_table(view: LedgerView) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(reason)}</td><td class=num>{events:,}</td></tr>"
        for reason, events in view.rejections
    )
    return (
        "<details><summary>The numbers</summary>"
        '<table id="rejections-table"><thead><tr><th>reason</th><th class=num>events</th>'
        f"</tr></thead><tbody>{rows}</tbody></table></details>"
    )


def _batch_table(view: LedgerView) -> str:
    totals = view.totals
    shown = len(view.latest)
    caption = (
        f"The latest {shown:,} of {totals.batches:,} batches, newest first;"
        " the totals cover every batch and the chart above every batch."
        if shown < totals.batches
        else f"All {totals.batches:,} batches, newest first."
    )
    head = (
        "<tr><th class=num>batch</th><th>committed at</th><th class=num>ingested</th>"
        "<th class=num>applied</th><th class=num>rejected</th><th class=num>duplicates</th>"
        "<th class=num>row writes</th><th class=num>execute s</th><th class=num>commit s</th>"
        "<th class=num>events / s</th></tr>"
    )
    rows = "".join(_batch_row(b) for b in view.latest)
    total_row = (
        f'<tr class="total"><td>all {totals.batches:,}</td><td></td>'
        f"<td class=num>{totals.ingested:,}</td><td class=num>{totals.applied:,}</td>"
        f"<td class=num>{totals.rejected:,}</td><td class=num>{totals.duplicates:,}</td>"
        f"<td class=num>{totals.changes:,}</td><td></td><td></td><td></td></tr>"
    )
    return (
        f'<h2>Batches</h2><p class="muted">{caption}</p>'
        f'<table id="batches"><thead>{head}</thead><tbody>{rows}</tbody>'
        f"<tfoot>{total_row}</tfoot></table>"
    )


def _batch_row(batch: BatchRow) -> str:
    commit = (
        f"{batch.commit_seconds:,.3f}"
        if batch.commit_seconds > 0
        else '<span class="muted" title="committed before commit latency was recorded">'
        "not measured</span>"
    )
    return (
        f'<tr data-batch="{batch.batch_id}"><td class=num>{batch.batch_id:,}</td>'
        f"<td>{html.escape(_when(batch.committed_at))}</td>"
        f"<td class=num>{batch.ingested:,}</td><td class=num>{batch.applied:,}</td>"
        f"<td class=num>{batch.rejected:,}</td><td class=num>{batch.duplicates:,}</td>"
        f"<td class=num>{batch.changes:,}</td><td class=num>{batch.execute_seconds:,.3f}</td>"
        f"<td class=num>{commit}</td><td class=num>{_rate_text(batch.throughput)}</td></tr>"
    )


def _chart_data(view: LedgerView) -> dict[str, Any]:
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


def _json_for_html(value: Any) -> str:
    """JSON safe inside <script>: no `</script>` or `<!--` can end or bend the element."""
    return (
        json.dumps(value, allow_nan=False)
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
    )


def _span(point: ThroughputPoint) -> str:
    if point.first_batch == point.last_batch:
        return f"{point.first_batch:,}"
    return f"{point.first_batch:,}–{point.last_batch:,}"


def _count_text(count: Any) -> str:
    return f"{count:,}" if isinstance(count, int) else "—"


def _rate_text(rate: float | None) -> str:
    """Events per second: whole above 100, one decimal below (0.4 must not read as 0)."""
    if rate is None:
        return "—"
    return f"{rate:,.0f}" if rate >= 100 else f"{rate:,.1f}"


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _all(n: int, noun: str = "audit check") -> str:
    return f"The {n:,} {noun}" if n == 1 else f"All {n:,} {noun}s"


def _when(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _page_time(page: Path) -> str:
    """A page's time, from its name."""
    stamp = page.stem.removeprefix(PAGE_PREFIX)
    try:
        return _when(datetime.strptime(stamp, _STAMP_FORMAT).replace(tzinfo=UTC))
    except ValueError:
        return page.stem
