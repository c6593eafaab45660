"""A reconciliation's page: what one `ledger reconcile` (or one run of the `ledger_reconcile`
DAG) recorded, for people to read, beside the audit pages and linked from the same index.

A reconciliation records one run per declared source (`ledger_recon_runs`); its page covers
that set of runs. From the top: the outcome in a sentence and the figures; which runs, of
which sources, by whom, when, over which ledger batches and statement files; the match rate
of each side (items matched of items considered: statement entries, ledger entries) as
figures and a chart; the open breaks by reason and by age (charts); each account's drift (the
balance its last statement stated against the ledger's balance as of that moment), the
accounts that drift first and highlighted; the oldest open breaks, one a row. Every chart has
a table of the same numbers under it.

The page is one self-contained file like an audit page (inline style and script, a Content
Security Policy allowing only them), named `reconciliation-<UTC time>.html`, with its summary
beside it (`.json`) from which the index lists it. The runs' own figures are fixed once they
committed; the open breaks and the drift are read as the page is written, which right after
the runs is their outcome (`reconciliation_queries`).

Amounts are integer minor units; where the caller says a source's currency and precision
(`money`) they read as money, elsewhere as minor units, and the page says which.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path

from sqlalchemy import Engine

from ledger_engine.core.money import Unit
from ledger_engine.report.links import audit_span, linked
from ledger_engine.report.naming import RECONCILIATION_PREFIX
from ledger_engine.report.provenance import Provenance
from ledger_engine.report.reconciliation_context import (
    ReconciliationContext,
    read_anew,
    reconciliation_context,
    reconciliation_summary,
)
from ledger_engine.report.reconciliation_queries import (
    DRIFT_ROWS,
    OLDEST_BREAKS,
    read_reconciliation,
)
from ledger_engine.report.render import render_reconciliation
from ledger_engine.report.store import (
    read_summaries,
    refresh_index,
    write_new_page,
    write_summary,
)


def write_reconciliation_page(
    reports: Path,
    engine: Engine,
    run_ids: Sequence[int],
    *,
    written_by: Provenance,
    money: Mapping[str, Unit] | None = None,
    oldest: int = OLDEST_BREAKS,
    drift_rows: int = DRIFT_ROWS,
) -> Path:
    """Write the page of the reconciliation that recorded the runs `run_ids` into the folder
    `reports`, keep its summary beside it, refresh the index; return the page's path.

    `written_by` says who wrote it (the entry point: a `ledger` command, a DAG run's task);
    the page links to the audit pages already written of the batches its runs read anew
    (`links`). `money` maps a source to its unit (`Sources.units`), for the amounts of its breaks
    and balances; `oldest` is how many open breaks the page lists, `drift_rows` at most how many
    accounts its drift table lists. Raises `UnknownRuns` (a `ValueError`) for an id that no
    run has. No run ids (a ledger declaring no source) gives a page saying so.
    """
    view = read_reconciliation(engine, run_ids, oldest=oldest, drift_rows=drift_rows)
    reports.mkdir(parents=True, exist_ok=True)
    audits = linked(read_anew(view), read_summaries(reports), audit_span)

    def context(created: datetime) -> ReconciliationContext:
        return reconciliation_context(
            view, created, written_by=written_by, linked=audits, money=money or {}
        )

    page, created = write_new_page(
        reports, RECONCILIATION_PREFIX, lambda created: render_reconciliation(context(created))
    )
    write_summary(page, reconciliation_summary(context(created), run_ids))
    refresh_index(reports)
    return page
