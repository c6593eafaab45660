"""`ledger audit`, `ledger verify` and `ledger report`: checking the committed ledger (the batch
audit, the full audit, the proof from PostgreSQL alone) and finding the audit's pages; and the
audit that `ledger run --audit` and `ledger demo` run after their batches."""

from __future__ import annotations

import argparse
import webbrowser

from rich.markup import escape
from rich.table import Table

from ledger_engine.apps import load_ledger
from ledger_engine.cli.output import console, progress
from ledger_engine.cli.parsing import Commands
from ledger_engine.config import Settings
from ledger_engine.core.stopwatch import Stopwatch
from ledger_engine.faults import FaultSwitch


def provenance(command: str):
    """The provenance of the pages `command` writes: it, on this host, by this user."""
    # Imported here: the audit stack (SQLAlchemy, Jinja2, Great Expectations) slows --help.
    from ledger_engine.report.provenance import Provenance

    return Provenance.from_command(command)


def batches_added(report):
    """The batches a pipeline run (its `PipelineReport`) committed, for its audit's page."""
    from ledger_engine.report.provenance import BatchSpan, RunBatches

    return RunBatches(BatchSpan.covering(b.batch_id for b in report.batches if b.committed))


def run_audit(settings: Settings, written_by, full: bool = False, ledger=None, run=None):
    """The batch audit (the batches since the last passing audit), or the full audit, of
    `ledger` (default: built once, from the settings, for the whole audit); its page says it
    was `written_by` this command, and which batches the pipeline `run` before it added."""
    from ledger_engine.tasks.audit_runs import run_audits

    what = "full audit" if full else "batch audit"
    faults = FaultSwitch.from_setting(settings.fault)
    with console.status(f"running the {what}: Merkle trees, hash chain, Great Expectations"):
        return run_audits(
            settings, ledger=ledger, faults=faults, full=full, written_by=written_by, run=run
        )


def print_audit(report, page) -> None:
    """An audit's scope, a table of its checks with each one's first finding, and the paths
    of its page and of the Great Expectations Data Docs it links."""
    if report.scope is not None:
        console.print(escape(report.scope.describe()), soft_wrap=True)
    table = Table(title="Audits")
    table.add_column("suite")
    table.add_column("check")
    table.add_column("outcome")
    table.add_column("first finding")
    for check in report.checks:
        outcome = "[green]passed" if check.passed else "[red]FAILED"
        table.add_row(check.suite, check.name, outcome, check.findings[0] if check.findings else "")
    console.print(table)
    console.print(f"audit report: {page}")
    links = {c.link for c in report.checks if c.link}
    for link in sorted(links):
        console.print(f"Great Expectations Data Docs: {link}")


def cmd_audit(settings: Settings, args: argparse.Namespace) -> int:
    """Audit the batches committed since the last passing audit (with --full: the whole
    ledger); exit 1 if any check fails."""
    command = "ledger audit --full" if args.full else "ledger audit"
    report, page = run_audit(settings, provenance(command), full=args.full)
    print_audit(report, page)
    return 0 if report.passed else 1


def cmd_verify(settings: Settings, args: argparse.Namespace) -> int:
    """Prove the system of record from PostgreSQL alone: the batch hash chain, every table's
    Merkle tree (down to the keys that differ) and the batch counts; with --replay, also
    re-execute the whole stored event log and compare everything. Exit 1 on any finding."""
    from ledger_engine.audit.proof.verify import verify_ledger
    from ledger_engine.store.database import open_store

    ledger = load_ledger(settings.app)
    engine = open_store(settings, ledger)  # the ledger built above, not built again
    watch = Stopwatch()
    try:
        with console.status("verifying: hash chain, Merkle trees, batch counts"):
            checks = verify_ledger(engine, ledger)
        if args.replay:
            checks += _replay(engine, ledger)
    finally:
        engine.dispose()
    return _print_checks(checks, watch.elapsed())


def _replay(engine, ledger) -> list:
    from ledger_engine.audit.rederivation.replay import replay_checks

    with progress() as bar:
        task = bar.add_task("replay: events re-executed", total=None)

        def on_progress(at) -> None:
            bar.update(task, completed=at.events_done, total=at.events_total)
            if at.phase == "tables":
                bar.update(task, description=f"replay: comparing table {at.table}")

        return replay_checks(engine, ledger, on_progress)


def _print_checks(checks: list, seconds: float) -> int:
    """Every check with all its findings; 0 if all passed, else 1."""
    for check in checks:
        outcome = "[green]passed[/]" if check.passed else "[red]FAILED[/]"
        console.print(f"{outcome}  {escape(check.suite)}: {escape(check.name)}")
        for finding in check.findings:
            console.print(f"        {escape(finding)}", soft_wrap=True)
    failures = sum(1 for c in checks if not c.passed)
    if failures:
        console.print(f"[red]{failures} of {len(checks)} checks failed[/] ({seconds:.1f} s)")
        return 1
    console.print(f"[green]every check passed[/] ({len(checks)} checks, {seconds:.1f} s)")
    return 0


def cmd_report(settings: Settings, args: argparse.Namespace) -> int:
    """Print the path of the newest audit report (with --open, open it in a browser)."""
    from ledger_engine.report import latest_report

    page = latest_report(settings.reports)
    if page is None:
        console.print(f"no audit report in {settings.reports} yet: run `ledger audit`")
        return 1
    console.print(str(page), soft_wrap=True, markup=False)
    if args.open and not webbrowser.open(page.as_uri()):
        console.print("no browser to open it with here; the path is above")
    return 0


# -- the parsers ------------------------------------------------------------------------------


def add_audit_parser(commands: Commands) -> None:
    """`ledger audit [--full]`."""
    audit = commands.add_parser("audit", help=cmd_audit.__doc__)
    audit.add_argument(
        "--full",
        action="store_true",
        help="the full audit: every Merkle tree recomputed and the whole-ledger suite",
    )
    audit.set_defaults(handler=cmd_audit)


def add_verify_parser(commands: Commands) -> None:
    """`ledger verify [--replay]`."""
    verify = commands.add_parser("verify", help=cmd_verify.__doc__)
    verify.add_argument(
        "--replay", action="store_true", help="also re-execute the stored event log and compare"
    )
    verify.set_defaults(handler=cmd_verify)


def add_report_parser(commands: Commands) -> None:
    """`ledger report [--open]`."""
    report = commands.add_parser("report", help=cmd_report.__doc__)
    report.add_argument("--open", action="store_true", help="open it in a web browser")
    report.set_defaults(handler=cmd_report)
