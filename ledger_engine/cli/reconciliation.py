"""`ledger reconcile`: loading the statements that have landed and reconciling each declared
source against the ledger; and the reconciliation the demo runs on a statement it lands."""

from __future__ import annotations

import argparse
import getpass
import socket
from collections import Counter
from datetime import UTC, datetime

from rich.table import Table

from ledger_engine.apps import load_ledger
from ledger_engine.cli.audits import provenance
from ledger_engine.cli.invocation import invoked_as
from ledger_engine.cli.output import console
from ledger_engine.cli.parsing import Commands
from ledger_engine.cli.statements import describe_sample, inboxes_help, print_inboxes
from ledger_engine.config import Settings
from ledger_engine.errors import NoSampleStatement, SourcesError


def cmd_reconcile(settings: Settings, args: argparse.Namespace) -> int:
    """Load the statements that have landed in each source's inbox folder (named below, and
    by `ledger statements`) and reconcile each source (--dry-run: show what would match,
    record nothing)."""
    ledger = load_ledger(settings.app)
    try:
        sources = _sources(settings, ledger)
    except (SourcesError, FileNotFoundError) as wrong:
        console.print(str(wrong), markup=False)
        return 2
    report = _reconcile(settings, ledger, sources, dry_run=args.dry_run)
    _print_reconciliation(report, dry_run=args.dry_run)
    print_inboxes(settings, sources, Counter(loaded.source for loaded in report.files))
    if not args.dry_run:
        _reconciliation_page(settings, ledger, sources, report, provenance("ledger reconcile"))
    return 0


def who() -> str:
    """Who runs this command: user@host."""
    return f"{getpass.getuser()}@{socket.gethostname()}"


def _sources(settings: Settings, ledger):
    # Imported here: reconciliation's stack (SQLAlchemy, PySpark as it runs) slows --help.
    from ledger_engine.reconcile.job import declared_sources

    return declared_sources(settings, ledger)


def _reconcile(settings: Settings, ledger, sources, *, dry_run: bool, spark=None):
    from ledger_engine.reconcile.job import run_reconciliation

    with console.status("reconciling: statements, matching on Spark, breaks"):
        return run_reconciliation(
            settings, ledger, sources, who=f"ledger ({who()})", dry_run=dry_run, spark=spark
        )


def _reconciliation_page(settings: Settings, ledger, sources, report, written_by) -> None:
    """Write the page of the runs `report` recorded beside the audit pages, saying it was
    `written_by` this command; print its path."""
    from ledger_engine.report.reconciliation import write_reconciliation_page
    from ledger_engine.store.database import open_views

    run_ids = [part.record.run_id for part in report.sources if part.record is not None]
    engine = open_views(settings, ledger)  # migrated by the run that just recorded
    try:
        page = write_reconciliation_page(
            settings.reports, engine, run_ids, written_by=written_by, money=sources.units
        )
    finally:
        engine.dispose()
    console.print(f"reconciliation page: {page}", markup=False, soft_wrap=True)


def _print_reconciliation(report, *, dry_run: bool) -> None:
    for loaded in report.files:
        console.print(
            f"{loaded.source} / {loaded.file_name}: {loaded.outcome}"
            f" ({loaded.entries} entries, {loaded.rejected} rejected)",
            markup=False,
        )
        if loaded.reason is not None:  # a file the store could not take: say why
            console.print(f"  {loaded.reason}", markup=False, soft_wrap=True)
    table = Table(title="Reconciliation" + (" (dry run: nothing recorded)" if dry_run else ""))
    columns = ("source", "statement items", "ledger items", "matches", "written off", "breaks")
    for column in columns:
        table.add_column(column, justify="right")
    for part in report.sources:
        table.add_row(
            part.source,
            str(len(part.scope.statement_items)),
            str(len(part.scope.ledger_items)),
            str(len(part.outcome.matches)),
            str(len(part.settlements)),
            str(len(part.outcome.breaks)),
        )
    console.print(table)
    for part in report.sources:
        reasons = Counter(b.reason for b in part.outcome.breaks)
        listed = ", ".join(f"{reason} {n}" for reason, n in sorted(reasons.items())) or "none"
        console.print(f"{part.source}: breaks: {listed}", markup=False, soft_wrap=True)


# -- the demo's reconciliation ----------------------------------------------------------------


def demo_reconciliation(settings: Settings, ledger, written_by, spark) -> None:
    """Where the ledger declares statement sources: land a day's statement with a few
    differences, reconcile it on `spark`, and show the breaks; its page was `written_by` the
    demo."""
    try:
        sources = _sources(settings, ledger)
    except FileNotFoundError:
        return  # this ledger reconciles against nothing
    _land_demo_statement(settings, ledger, sources, datetime.now(UTC).strftime("%Y%m%d%H%M%S"))
    report = _reconcile(settings, ledger, sources, dry_run=False, spark=spark)
    _print_reconciliation(report, dry_run=False)
    _reconciliation_page(settings, ledger, sources, report, written_by)
    me = invoked_as()
    console.print(
        f"open breaks: {me} breaks; work one: {me} breaks match ID ID --note TEXT, or"
        f" {me} breaks write-off ID --note TEXT; reconcile new statements: {me} reconcile",
        markup=False,
        soft_wrap=True,
    )


def _land_demo_statement(settings: Settings, ledger, sources, tag: str) -> None:
    """Land a sample statement (`ledger statements sample`'s) of the first camt.053 source."""
    from ledger_engine.reconcile.sample import first_camt053_source, sample_statement
    from ledger_engine.reconcile.statement_inbox import land_statement
    from ledger_engine.store.database import open_store

    source = first_camt053_source(sources)
    if source is None:
        console.print("no camt.053 statement source to land a demo statement for")
        return
    engine = open_store(settings, ledger)
    try:
        sample = sample_statement(engine, source, message_id=f"LEDGER-DEMO-{tag}")
    except NoSampleStatement as refused:
        console.print(str(refused), markup=False, soft_wrap=True)
        return
    finally:
        engine.dispose()
    landed = land_statement(settings.statements, source, f"demo-{tag}.xml", sample.document)
    describe_sample(sample, "landed")
    console.print(f"landed as {landed}", markup=False, soft_wrap=True)


# -- the parser -------------------------------------------------------------------------------


def add_reconcile_parser(commands: Commands) -> None:
    """`ledger reconcile [--dry-run]`, its help ending with the sources' inboxes."""
    reconcile = commands.add_parser(
        "reconcile",
        help=cmd_reconcile.__doc__,
        description=cmd_reconcile.__doc__,
        more_help=inboxes_help,
    )
    reconcile.add_argument(
        "--dry-run", action="store_true", help="show what would match; record nothing"
    )
    reconcile.set_defaults(handler=cmd_reconcile)
