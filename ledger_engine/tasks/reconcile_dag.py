"""The bodies of the `ledger_reconcile` DAG's tasks (`dags/ledger_reconcile.py`): the DAG file
holds the flow and a line per task, the work is here.

- `reconcile_task` runs the reconciliation job (`reconcile.job`: the statements landed since
  the last run loaded, each declared source matched on Spark, its matches and breaks recorded)
  and returns the run's summary for XCom: per source its items, matches, breaks by reason and
  the run recorded.
- `page_task` writes the HTML page of the runs it recorded
  (`report.reconciliation.write_reconciliation_page`).

Open breaks are the business state reconciliation exists to show, not a failure of the run:
a task fails only when reconciliation itself fails (a mistake in the declaration, a statement
inbox or a database it cannot reach, Spark failing, another run of a source recording first).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from ledger_engine.apps import load_ledger
from ledger_engine.config import Settings
from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.core.money import Unit, money_text
from ledger_engine.reconcile.job import declared_sources, run_reconciliation
from ledger_engine.reconcile.matching import reason_words
from ledger_engine.reconcile.run import ReconcileReport
from ledger_engine.reconcile.sources import Sources
from ledger_engine.reconcile.statement_inbox import inbox_folder
from ledger_engine.report.provenance import Provenance


def reconcile_task(who: str, log: logging.Logger, only: str | None = None) -> dict[str, Any]:
    """Reconcile every declared source (or the source `only`), recording the run as `who`;
    return its summary (`reconcile_summary`). A ledger that declares no sources (and names no
    declaration file of its own) has nothing to reconcile: the task is skipped."""
    settings = Settings.from_env()
    ledger = load_ledger(settings.app)
    sources = _declared(settings, ledger)
    if only is not None:
        sources = sources.only(only)
        log.info("this run reconciles the source %s alone", only)
    log.info("statements %s, Spark master %s", settings.statements, settings.spark_master)
    for name, source in sources.sources.items():
        log.info("source %s: inbox %s/", name, inbox_folder(settings.statements, source))
    report = run_reconciliation(settings, ledger, sources, who=who)
    summary = reconcile_summary(report)
    for loaded in summary["files"]:
        log.info("statement %s", loaded)
    for name, part in summary["sources"].items():
        log.info("source %s: %s", name, part)
    for line in _breaks_changed(settings, ledger, sources, report):
        log.info("%s", line)
    return summary


def _breaks_changed(
    settings: Settings, ledger: StreamingLedger, sources: Sources, report: ReconcileReport
) -> list[str]:
    """`breaks_changed`, read through the ledger's readers' views."""
    from ledger_engine.store.database import open_views

    engine = open_views(settings, ledger)
    try:
        return breaks_changed(engine, sources.units, report)
    finally:
        engine.dispose()


def breaks_changed(engine: Engine, units: Mapping[str, Unit], report: ReconcileReport) -> list[str]:
    """A line for each break the run opened or closed: its id, reason, account and amount as
    money in its source's unit (`units`, by source), read back by id from `engine` (a run
    opens and closes few)."""
    from ledger_engine.reconcile.storage.runs import described_breaks

    changed = {
        break_id: verb
        for part in report.sources
        if part.record is not None
        for verb, ids in (("opened", part.record.opened_ids), ("closed", part.record.closed_ids))
        for break_id in ids
    }
    if not changed:
        return []
    described = described_breaks(engine, list(changed))
    assert [b.break_id for b in described] == sorted(changed), "every break the run named"
    lines = []
    for b in described:
        # A closed break says how: matched, manual match, written off, superseded.
        how = f" ({b.resolution.replace('_', ' ')})" if changed[b.break_id] == "closed" else ""
        lines.append(
            f"source {b.source}: {changed[b.break_id]} break {b.break_id}{how}: "
            f"{reason_words(b.reason)}, account {b.account}, {_amounts(b, units.get(b.source))}"
        )
    return lines


def _amounts(described: Any, unit: Unit | None) -> str:
    """A break's money in words: the amount of its one side, or for a pair of both sides how
    far apart they are and each side's amount (a break of one side has no difference)."""
    statement, ledger = described.statement_amount, described.ledger_amount
    if statement is not None and ledger is not None:
        difference = described.amount_difference
        if difference is None:
            difference = statement - ledger
        return (
            f"{money_text(difference, unit)} apart (statement {money_text(statement, unit)},"
            f" ledger {money_text(ledger, unit)})"
        )
    if statement is not None:
        return f"{money_text(statement, unit)} on the statement"
    assert ledger is not None, "a break holds a statement entry or a ledger change"
    return f"{money_text(ledger, unit)} in the ledger"


def reconcile_summary(report: ReconcileReport) -> dict[str, Any]:
    """What a run did, as plain values: the files it loaded (a file the store could not take
    with the `reason` it was rejected for), and per source the items it considered, its
    matches, its open breaks by reason (those it opened and those it kept), the breaks it
    opened and closed (of which `written_off`: write-offs it settled) and the
    run it recorded; `run_ids` lists those runs."""
    sources = {}
    for part in report.sources:
        record = part.record
        sources[part.source] = {
            "run_id": record.run_id if record is not None else None,
            "statement_items": len(part.scope.statement_items),
            "ledger_items": len(part.scope.ledger_items),
            "matches": len(part.outcome.matches),
            "breaks": dict(sorted(Counter(b.reason for b in part.outcome.breaks).items())),
            "breaks_opened": record.breaks_opened if record is not None else 0,
            "breaks_closed": record.breaks_closed if record is not None else 0,
            "written_off": len(part.settlements),
        }
    return {
        "files": [
            {
                "source": f.source,
                "file": f.file_name,
                "outcome": f.outcome,
                "entries": f.entries,
                "rejected": f.rejected,
                **({"reason": f.reason} if f.reason is not None else {}),
            }
            for f in report.files
        ],
        "sources": sources,
        "run_ids": [p["run_id"] for p in sources.values() if p["run_id"] is not None],
    }


def page_task(
    run_ids: list[int],
    written_by: Provenance,
    log: logging.Logger,
    publish_page: Callable[[Path], None] | None = None,
) -> dict[str, Any]:
    """Write the reconciliation page of the runs `run_ids` (a DAG run's: its task
    `written_by`, which the page names) under the reports folder; return its path.
    `publish_page`, if given, is called with the page's path once it is written (the DAG's
    link to the page, `ledger_engine.dags.publish_page`)."""
    from ledger_engine.report.reconciliation import write_reconciliation_page
    from ledger_engine.store.database import open_views

    settings = Settings.from_env()
    ledger = load_ledger(settings.app)
    sources = _declared(settings, ledger)
    engine = open_views(settings, ledger)
    try:
        page = write_reconciliation_page(
            settings.reports, engine, run_ids, written_by=written_by, money=sources.units
        )
    finally:
        engine.dispose()
    if publish_page is not None:
        publish_page(page)
    log.info("reconciliation page: %s", page)
    return {"page": str(page), "run_ids": list(run_ids)}


def _declared(settings: Settings, ledger) -> Sources:
    """The ledger's sources; the task is skipped where the ledger declares none in the file
    beside its expectations (a declaration file named by the settings must exist)."""
    try:
        return declared_sources(settings, ledger)
    except FileNotFoundError:
        if settings.reconciliation is not None:
            raise
        from airflow.sdk.exceptions import AirflowSkipException

        raise AirflowSkipException("the ledger declares no statement sources") from None
