"""`ledger generate`, `ledger run` and `ledger demo`: landing a ledger's sample events,
committing what has landed in micro-batches, and the demo that does both, audits and
reconciles."""

from __future__ import annotations

import argparse
import shlex
from datetime import UTC, datetime

from rich.table import Table

from ledger_engine.apps import load_ledger
from ledger_engine.cli.audits import (
    audit_verdict,
    batches_added,
    print_audit,
    provenance,
    run_audit,
)
from ledger_engine.cli.inbox import print_left_aside
from ledger_engine.cli.invocation import invoked_as
from ledger_engine.cli.output import console, progress, say
from ledger_engine.cli.parsing import Commands, positive
from ledger_engine.cli.preflight import check_connection
from ledger_engine.cli.reconciliation import demo_reconciliation
from ledger_engine.cli.statuses import EXIT_BUSY
from ledger_engine.config import Settings
from ledger_engine.core.records import Event
from ledger_engine.core.stopwatch import Stopwatch
from ledger_engine.errors import BatchFailed, CheckpointMismatch, LedgerBusy, NoSampleEvents
from ledger_engine.pipeline.event_inbox import write_event_files


def cmd_generate(settings: Settings, args: argparse.Namespace) -> int:
    """Write the ledger's sample events (its declared `sample_events`) as event files into
    the inbox (LEDGER_INBOX); `ledger run` commits them."""
    try:
        files, count = _generate(settings, load_ledger(settings.app), args)
    except NoSampleEvents as missing:
        console.print(str(missing), markup=False)
        return 2
    console.print(f"wrote {count} events in {len(files)} files to {settings.inbox}")
    return 0


def _generate(settings: Settings, ledger, args: argparse.Namespace) -> tuple[list, int]:
    """Land `args.events` sample events of `ledger` over `args.rows` rows, seeded by
    `args.seed`, with request ids and file names tagged by `args.tag` (default: the time)."""
    sample = ledger.sample_events
    if sample is None:
        raise NoSampleEvents(ledger.name)
    # A run tag keeps file names and request ids of separate demo runs apart.
    tag = getattr(args, "tag", None) or datetime.now(UTC).strftime("%Y%m%d%H%M%S")
    generated = [
        Event(
            e.stream,
            f"{tag}-{e.request_id}" if isinstance(e.request_id, str) else e.request_id,
            e.payload,
        )
        for e in sample(args.events, rows=args.rows, seed=args.seed)
    ]
    files = write_event_files(generated, settings.inbox, events_per_file=1000, prefix=f"demo-{tag}")
    return files, len(generated)


def _run(settings: Settings, expected_events: int | None = None, spark=None):
    """Run the pipeline (on `spark`, else on a session of its own) with a progress bar, drawn
    from the first batch or wait on: a run with nothing to do draws none."""
    # Imported here: the pipeline's stack (PySpark, pandas, SQLAlchemy) slows `ledger --help`.
    from ledger_engine.pipeline.job import run_pipeline

    bar = progress()
    task = bar.add_task("micro-batches: events committed", total=expected_events, start=False)

    def shown() -> None:
        if not bar.live.is_started:
            bar.start()
            bar.start_task(task)

    def on_batch(summary) -> None:
        shown()
        bar.advance(task, summary.ingested)
        bar.update(task, description=f"micro-batch {summary.batch_id}: events committed")
        # The line a task log shows for the batch, kept above the bar.
        bar.console.print(summary.describe(), highlight=False, soft_wrap=True)

    def on_wait(holder, waited: float) -> None:
        shown()
        who = holder.describe() if holder is not None else "another run"
        bar.update(task, description=f"waiting {waited:.0f} s for {who}")

    try:
        return run_pipeline(settings, spark=spark, on_batch=on_batch, on_wait=on_wait)
    finally:
        if bar.live.is_started:
            bar.stop()


def _print_run(report) -> None:
    table = Table(title="Pipeline run")
    for column in ("batches", "ingested", "applied", "rejected", "duplicate", "wall s"):
        table.add_column(column, justify="right")
    committed = [b for b in report.batches if b.committed]
    table.add_row(
        str(len(committed)),
        str(report.total("ingested")),
        str(report.total("applied")),
        str(report.total("rejected")),
        str(report.total("duplicates")),
        f"{report.wall_seconds:.1f}",
    )
    console.print(table)


def cmd_run(settings: Settings, args: argparse.Namespace) -> int:
    """Process every event file that has landed in the inbox (then audit, with --audit)."""
    if args.wait is not None:
        settings = settings.with_overrides(run_wait_seconds=args.wait)
    check_connection(settings, load_ledger(settings.app))  # before the progress bar is drawn
    try:
        report = _run(settings)
    except LedgerBusy as busy:
        console.print(f"[yellow]{busy}")
        return EXIT_BUSY
    except BatchFailed as failed:
        console.print(f"[red]{failed}")
        return 1
    except CheckpointMismatch as mismatch:
        console.print(str(mismatch), style="red", markup=False, soft_wrap=True)
        return 2
    committed = sum(1 for b in report.batches if b.committed)
    if committed:
        _print_run(report)
    print_left_aside(settings, committed)
    if not args.audit:
        return 0
    written_by = provenance("ledger run --audit")
    audited = run_audit(settings, written_by, run=batches_added(report))
    print_audit(audited)
    say(audit_verdict(audited))
    return 0 if audited.passed else 1


def cmd_demo(settings: Settings, args: argparse.Namespace) -> int:
    """Generate the ledger's sample events, run the pipeline, run the audits, print a
    summary."""
    watch = Stopwatch()
    ledger = load_ledger(settings.app)
    check_connection(settings, ledger)  # before events land and Spark starts
    try:
        files, count = _generate(settings, ledger, args)
    except NoSampleEvents as missing:
        console.print(str(missing), markup=False)
        return 2
    console.print(
        f"generated {count} events of ledger {ledger.name!r} in {len(files)} files"
        f" in {settings.inbox}",
        markup=False,
    )
    # One Spark session for the demo's micro-batches and its reconciliation: a second one
    # would cost a second start-up.
    spark = _spark_session(settings)
    try:
        try:
            run_report = _run(settings, expected_events=count, spark=spark)
        except CheckpointMismatch as mismatch:
            console.print(str(mismatch), style="red", markup=False, soft_wrap=True)
            return 2
        _print_run(run_report)
        written_by = provenance("ledger demo")  # its audit page and its reconciliation page
        added = batches_added(run_report)
        audited = run_audit(settings, written_by, ledger=ledger, run=added)
        print_audit(audited)
        demo_reconciliation(settings, ledger, written_by, spark)
    finally:
        spark.stop()
    _print_next_steps(settings, ledger)
    say(_demo_verdict(run_report, audited, watch.elapsed()))
    return 0 if audited.passed else 1


def _demo_verdict(run_report, audited, seconds: float) -> str:
    """The demo in one line, its last: what it committed and the audit's verdict."""
    committed = sum(1 for b in run_report.batches if b.committed)
    return (
        f"demo {'passed' if audited.passed else 'FAILED'} in {seconds:.1f} s: "
        f"{run_report.total('ingested')} events in {committed} batches; {audit_verdict(audited)}"
    )


def _spark_session(settings: Settings):
    """A Spark session as the settings describe it, started with a status line."""
    from ledger_engine.runtime.spark.session import build_session

    with console.status("starting Spark"):
        return build_session(
            settings.spark_master,
            driver_host=settings.spark_driver_host,
            driver_memory=settings.spark_driver_memory,
        )


def _print_next_steps(settings: Settings, ledger) -> None:
    """How to look at what the demo committed, in this ledger's own names, typed as the demo
    was run (`.venv/bin/ledger` where the PATH has no `ledger`); and, on the embedded server,
    that it keeps running and how to stop it."""
    me = invoked_as()
    queries = [f"{me} balance KEY --table {shlex.quote(next(iter(ledger.tables)))}"]
    queries += [
        f"{me} psql -c {shlex.quote(f'SELECT * FROM {view.sql_name} LIMIT 10')}"
        for view in ledger.views.values()
    ] or [f"{me} psql -c 'SELECT * FROM ledger_rows LIMIT 10'"]
    say("query what was committed:\n  " + "\n  ".join(queries))
    if settings.database_url is None:
        say(
            f"the embedded PostgreSQL server keeps running for these commands (its data in "
            f"{settings.pgdata}); stop it with: {me} db stop"
        )


# -- the parsers ------------------------------------------------------------------------------


def _sample_options(parser: argparse.ArgumentParser, events: int) -> None:
    """The options that say which sample events to land: how many, over how many rows."""
    parser.add_argument("--events", type=positive, default=events, help="number of events")
    parser.add_argument(
        "--rows",
        "--accounts",
        dest="rows",
        type=positive,
        default=1000,
        help="how many rows the events spread over (accounts, for the bank)",
    )
    parser.add_argument("--seed", type=int, default=7, help="random seed")


def add_demo_parser(commands: Commands) -> None:
    """`ledger demo [--events N] [--rows N] [--seed N]`."""
    demo = commands.add_parser("demo", help=cmd_demo.__doc__)
    _sample_options(demo, 20_000)
    demo.set_defaults(handler=cmd_demo)


def add_generate_parser(commands: Commands) -> None:
    """`ledger generate [--events N] [--rows N] [--seed N] [--tag TAG]`."""
    generate = commands.add_parser(
        "generate",
        help=cmd_generate.__doc__,
        description=cmd_generate.__doc__,
        more_help=_inbox_help,
    )
    _sample_options(generate, 10_000)
    generate.add_argument("--tag", help="run tag for file names and request ids")
    generate.set_defaults(handler=cmd_generate)


def _inbox_help() -> str:
    """The inbox the settings name now, for `generate --help` (whatever is wrong elsewhere)."""
    try:
        inbox = Settings.from_env().inbox
    except ValueError as wrong:
        return f"inbox: LEDGER_INBOX (default $LEDGER_DATA_DIR/inbox), unreadable now: {wrong}"
    return f"inbox: {inbox}/ (LEDGER_INBOX; default $LEDGER_DATA_DIR/inbox)"


def add_run_parser(commands: Commands) -> None:
    """`ledger run [--wait SECONDS] [--audit]`."""
    run = commands.add_parser("run", help=cmd_run.__doc__)
    run.add_argument(
        "--wait",
        type=float,
        metavar="SECONDS",
        help="how long to wait for another run to end (default: LEDGER_RUN_WAIT_SECONDS)",
    )
    run.add_argument(
        "--audit", action="store_true", help="audit the batches committed since the last audit"
    )
    run.set_defaults(handler=cmd_run)
