"""The audit report: an HTML page per audit run, and an index of every run, newest first.

A page is one self-contained file that reads the same offline: its style and its scripts (the
charts', and the one that takes the colour mode of Airflow's frame) are inline, and a Content
Security Policy that names their hashes, and nothing else, keeps the browser from loading
anything from anywhere (no CDN, no fonts, no images). It wears Airflow's look (its fonts,
colours light and dark, sizes and spacing: `static/report.css`), as it is read in Airflow's
frame. From the top:

- the verdict, which kind of audit it was (the batch audit of a range of batches, or the full
  audit), a status tile per check suite (Merkle roots and batch hash chain, Great
  Expectations, replay, pipeline, or any suite a later audit adds) and the ledger's key
  figures (with each table of integers' total, as money in the unit it declares), with the
  head of the batch hash chain (its hash and Merkle roots);
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

A reconciliation (`ledger reconcile`, the `ledger_reconcile` DAG) has a page of its own,
`reconciliation-<stamp>.html`, listed in the same index: see `reconciliation`.

Every page says where it comes from: who wrote it (a `provenance.Provenance` its entry point
hands down: an Airflow DAG run's task, or a `ledger` command on a host), which batches the
pipeline run before an audit added (or else those the audit covered), and the pages of the
other kind about the same batches (`links`: the later page links to the earlier, every page
to its row of the index, which lists every link both ways). Its summary keeps them, and the
index shows them.

The package, one idea a module:

- `queries`: the SQL reads of the ledger and the dataclasses they fill (`LedgerView`);
- `store`: the folder of pages: writing a page, its summary and the index, atomically;
- `naming`: the names of those files;
- `provenance`: who wrote a page, and the spans of batches pages are about;
- `links`: which audit pages and reconciliation pages link to each other, and why;
- `context`: what a page and the index show, derived from an `AuditReport` and a `LedgerView`;
- `render`: the HTML, from the Jinja2 templates in `templates/` (autoescaped);
- `formats`: how numbers, times and counts read (the templates' filters);
- `assets`: the inline style and script (`static/`) and the Content Security Policy naming them;
- `reconciliation`: a reconciliation's page (`write_reconciliation_page`), from
  `reconciliation_queries` (its reads, SQL in `audit/sql/report_reconciliation_*.sql`) and
  `reconciliation_context` (what it shows, and its row of the index).
"""

from ledger_engine.audit.findings import MAX_FINDINGS
from ledger_engine.report.naming import INDEX_NAME, PAGE_PREFIX
from ledger_engine.report.queries import (
    CHART_POINTS,
    TABLE_BATCHES,
    BatchRow,
    LedgerView,
    ThroughputPoint,
    Totals,
    read_ledger,
)
from ledger_engine.report.reconciliation import write_reconciliation_page
from ledger_engine.report.render import render_index, render_page
from ledger_engine.report.store import latest_report, write_report

__all__ = [
    "CHART_POINTS",
    "INDEX_NAME",
    "MAX_FINDINGS",
    "PAGE_PREFIX",
    "TABLE_BATCHES",
    "BatchRow",
    "LedgerView",
    "ThroughputPoint",
    "Totals",
    "latest_report",
    "read_ledger",
    "render_index",
    "render_page",
    "write_reconciliation_page",
    "write_report",
]
