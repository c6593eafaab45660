"""The HTML of an audit run's page, of a reconciliation's page and of the index, from the
Jinja2 templates in `templates/`.

Autoescaping is on in every template: a check's name, a finding, a rejection reason or a link
comes from data and is always shown as text. Only these go into a page as they are: the
package's own style and scripts (`static/`, see `assets`) and the chart data, which
`script_json` escapes for a <script> element. Undefined names are errors (StrictUndefined): a
template that misspells one fails to render rather than leave a blank.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape

from ledger_engine.audit.findings import AuditReport
from ledger_engine.report.assets import assets
from ledger_engine.report.context import (
    INDEX_COUNTS,
    BatchesView,
    index_rows,
    page_context,
)
from ledger_engine.report.formats import FILTERS, MISSING
from ledger_engine.report.links import cross_links
from ledger_engine.report.naming import INDEX_NAME
from ledger_engine.report.provenance import Provenance
from ledger_engine.report.queries import LedgerView
from ledger_engine.report.reconciliation_context import (
    ReconciliationContext,
    reconciliation_rows,
)


def render_page(
    report: AuditReport,
    view: LedgerView,
    created: datetime,
    *,
    written_by: Provenance | None = None,
    batches: BatchesView | None = None,
    linked: Sequence[Path] = (),
) -> str:
    """The HTML of one audit run's page (`context.page_context` says what the keywords are)."""
    context = page_context(
        report, view, created, written_by=written_by, batches=batches, linked=linked
    )
    return _charted_page("page.html", context)


def render_reconciliation(page: ReconciliationContext) -> str:
    """The HTML of one reconciliation's page."""
    return _charted_page("reconciliation.html", page)


def _charted_page(template: str, page: Any) -> str:
    """A page of `template` with the report's style and chart script inline, under the
    pages' content security policy."""
    inline = assets()
    return _render(
        template,
        policy=inline.page_policy,
        style=Markup(inline.style.source),
        theme=Markup(inline.theme.source),
        script=Markup(inline.script.source),
        page=page,
    )


Summaries = Sequence[tuple[Path, Mapping[str, Any] | None]]


def render_index(pages: Summaries, reconciliations: Summaries = ()) -> str:
    """The HTML of the index: one row per audit page and one per reconciliation page (each
    newest first, as given), each with its summary (None for a page written without one) and
    its links to the pages of the other kind about the same batches (`links`)."""
    inline = assets()
    to_reconciliations, to_audits = cross_links(pages, reconciliations)
    return _render(
        "index.html",
        policy=inline.index_policy,
        style=Markup(inline.style.source),
        theme=Markup(inline.theme.source),
        rows=index_rows(pages, to_reconciliations),
        counts=INDEX_COUNTS,
        reconciliations=reconciliation_rows(reconciliations, to_audits),
    )


def script_json(value: Any) -> Markup:
    """JSON safe inside <script>: no `</script>` or `<!--` can end or bend the element.

    `<`, `>` and `&` become \\u escapes, which JSON.parse reads back as the same characters.
    json.dumps escapes every non-ASCII character (ensure_ascii), U+2028 and U+2029 among them,
    which older JavaScript takes for line ends. NaN and infinities are refused: JSON has none.
    """
    escaped = (
        json.dumps(value, allow_nan=False)
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
    )
    return Markup(escaped)


def breakable(figure: str) -> Markup:
    """A figure that may wrap after each group of its digits where its box is too narrow for
    it (a total past a BIGINT in a tile): the text, escaped, with a <wbr> after each comma.
    It reads the same; a line break never falls inside a group of three digits."""
    return Markup(",<wbr>").join(escape(part) for part in figure.split(","))


def _render(template: str, **context: Any) -> str:
    return _environment().get_template(template).render(**context)


@cache
def _environment() -> Environment:
    environment = Environment(
        loader=PackageLoader("ledger_engine.report", "templates"),
        autoescape=select_autoescape(["html"], default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    environment.filters.update(FILTERS)
    environment.filters["script_json"] = script_json
    environment.filters["breakable"] = breakable
    environment.globals.update(index_name=INDEX_NAME, missing=MISSING)
    return environment
