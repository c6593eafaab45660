"""`ledger audit`, `ledger verify` and `ledger report`: checking the committed ledger (the batch
audit, the full audit, the proof from PostgreSQL alone) and finding the audit's pages; and the
audit that `ledger run --audit` and `ledger demo` run after their batches."""

from __future__ import annotations

import argparse
import json
import webbrowser
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from ledger_engine.apps import load_ledger
from ledger_engine.cli.output import console, progress, say
from ledger_engine.cli.parsing import Commands, add_json_option
from ledger_engine.config import Settings
from ledger_engine.core.stopwatch import Stopwatch
from ledger_engine.faults import FaultSwitch

if TYPE_CHECKING:
    from ledger_engine.audit.findings import AuditReport


def provenance(command: str):
    """The provenance of the pages `command` writes: it, on this host, by this user."""
    # Imported here: the audit stack (SQLAlchemy, Jinja2, Great Expectations) slows --help.
    from ledger_engine.report.provenance import Provenance

    return Provenance.from_command(command)


def batches_added(report):
    """The batches a pipeline run (its `PipelineReport`) committed, for its audit's page."""
    from ledger_engine.report.provenance import BatchSpan, RunBatches

    return RunBatches(BatchSpan.covering(b.batch_id for b in report.batches if b.committed))


@dataclass(frozen=True)
class Audited:
    """An audit run (`report`), or none where a batch audit found nothing new since the last
    passing audit (`report` None, `since` the batch it reached); the page to read either way."""

    report: AuditReport | None
    page: Path | None
    since: int | None = None

    @property
    def passed(self) -> bool:
        return self.report is None or self.report.passed


def run_audit(settings: Settings, written_by, full: bool = False, ledger=None, run=None):
    """The batch audit (the batches since the last passing audit), or the full audit, of
    `ledger` (default: built once, from the settings, for the whole audit); its page says it
    was `written_by` this command, and which batches the pipeline `run` before it added. A
    batch audit with no batch since the last passing one runs nothing and writes no page: the
    last page stands (an `Audited` without a report)."""
    from ledger_engine.tasks.audit_runs import run_audits

    ledger = ledger or load_ledger(settings.app)
    if not full:
        unchanged = _nothing_new(settings, ledger)
        if unchanged is not None:
            return unchanged
    what = "full audit" if full else "batch audit"
    faults = FaultSwitch.from_setting(settings.fault)
    with console.status(f"running the {what}: Merkle trees, hash chain, Great Expectations"):
        report, page = run_audits(
            settings, ledger=ledger, faults=faults, full=full, written_by=written_by, run=run
        )
    return Audited(report, page)


def _nothing_new(settings: Settings, ledger) -> Audited | None:
    """The last audit's page, where no batch was committed since the last passing audit and
    there is a page to show; None where the batch audit has work."""
    from ledger_engine.audit.findings import BATCHES
    from ledger_engine.audit.scope import read_scope
    from ledger_engine.report import latest_report
    from ledger_engine.store.database import open_store

    engine = open_store(settings, ledger)
    try:
        scope = read_scope(engine, BATCHES)
    finally:
        engine.dispose()
    page = latest_report(settings.reports)
    if not scope.empty or scope.last_batch < 0 or page is None:
        return None
    return Audited(None, page, since=scope.last_batch)


def print_audit(audited: Audited) -> None:
    """An audit's scope, a table of its checks with each one's first finding, and the paths
    of its page and of the Great Expectations Data Docs it links; or that there was nothing
    new to audit."""
    report, page = audited.report, audited.page
    if report is None:
        return
    if report.scope is not None:
        say(report.scope.describe())
    table = Table(title="Audits")
    table.add_column("suite")
    table.add_column("check")
    table.add_column("outcome")
    table.add_column("first finding")
    for check in report.checks:
        outcome = "[green]passed" if check.passed else "[red]FAILED"
        first = escape(check.findings[0]) if check.findings else ""
        table.add_row(escape(check.suite), escape(check.name), outcome, first)
    console.print(table)
    say(f"audit report: {page}")
    for link in sorted({c.link for c in report.checks if c.link}):
        say(f"Great Expectations Data Docs: {link}")


def audit_verdict(audited: Audited) -> str:
    """The audit in one line, for the end of what a command printed: passed or failed, of how
    many checks, over which batches, and its page."""
    report = audited.report
    if report is None:
        return f"audit: nothing new since batch {audited.since}; report: {audited.page}"
    over = f" ({report.scope.describe()})" if report.scope is not None else ""
    if report.passed:
        return f"audit passed: every check of {len(report.checks)}{over}; report: {audited.page}"
    failed = len(report.failures())
    return f"audit FAILED: {failed} of {len(report.checks)} checks{over}; report: {audited.page}"


def audit_json(audited: Audited) -> dict:
    """An audit for --json: its verdict, its checks and its page."""
    report = audited.report
    checks = [] if report is None else [check_json(c) for c in report.checks]
    scope = None if report is None or report.scope is None else report.scope.describe()
    return {
        "passed": audited.passed,
        "nothing_new": report is None,
        "since_batch": audited.since,
        "scope": scope,
        "checks": checks,
        "report": str(audited.page) if audited.page is not None else None,
        "data_docs": sorted({c.link for c in report.checks if c.link}) if report else [],
    }


def check_json(check) -> dict:
    """One check for --json."""
    return {
        "suite": check.suite,
        "name": check.name,
        "passed": check.passed,
        "findings": list(check.findings),
    }


def cmd_audit(settings: Settings, args: argparse.Namespace) -> int:
    """Audit the batches committed since the last passing audit (with --full: the whole
    ledger); exit 1 if any check fails. With nothing new since the last passing audit, say so
    and name its page (no new page)."""
    command = "ledger audit --full" if args.full else "ledger audit"
    audited = run_audit(settings, provenance(command), full=args.full)
    if args.json:
        say(json.dumps(audit_json(audited)))
    else:
        print_audit(audited)
        say(audit_verdict(audited))
    return 0 if audited.passed else 1


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
    if args.json:
        passed = bool(checks) and all(c.passed for c in checks)
        answer = {"passed": passed, "checks": [check_json(c) for c in checks]}
        say(json.dumps(answer | {"seconds": round(watch.elapsed(), 3)}))
        return 0 if passed else 1
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
    add_json_option(audit)
    audit.set_defaults(handler=cmd_audit)


def add_verify_parser(commands: Commands) -> None:
    """`ledger verify [--replay]`."""
    verify = commands.add_parser("verify", help=cmd_verify.__doc__)
    verify.add_argument(
        "--replay", action="store_true", help="also re-execute the stored event log and compare"
    )
    add_json_option(verify)
    verify.set_defaults(handler=cmd_verify)


def add_report_parser(commands: Commands) -> None:
    """`ledger report [--open]`."""
    report = commands.add_parser("report", help=cmd_report.__doc__)
    report.add_argument("--open", action="store_true", help="open it in a web browser")
    report.set_defaults(handler=cmd_report)
