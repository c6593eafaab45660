"""The `ledger` command: demo, generate, run, audit, verify, report, balance, request,
reconcile, statements (`cli_statements`), breaks, psql, db and airflow."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from sqlalchemy import text

from ledger_engine.config import Settings
from ledger_engine.core.money import Unit, money_text
from ledger_engine.core.records import Event
from ledger_engine.core.stopwatch import Stopwatch

console = Console()


def _progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )


def cmd_generate(settings: Settings, args: argparse.Namespace) -> int:
    """Write the ledger's sample events (its declared `sample_events`) into the inbox."""
    from ledger_engine.apps import load_ledger
    from ledger_engine.errors import NoSampleEvents

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
    from ledger_engine.errors import NoSampleEvents
    from ledger_engine.pipeline.inbox import write_event_files

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


# `ledger run` exits with this when another run holds the ledger (EX_TEMPFAIL: try again).
EXIT_BUSY = 75


def _run(settings: Settings, expected_events: int | None = None, spark=None):
    """Run the pipeline (on `spark`, else on a session of its own) with a progress bar."""
    from ledger_engine.pipeline.job import run_pipeline

    with _progress() as progress:
        task = progress.add_task("micro-batches: events committed", total=expected_events)

        def on_batch(summary) -> None:
            progress.advance(task, summary.ingested)
            progress.update(task, description=f"micro-batch {summary.batch_id}: events committed")
            # The line a task log shows for the batch, kept above the bar.
            progress.console.print(summary.describe(), highlight=False)

        def on_wait(holder, waited: float) -> None:
            who = holder.describe() if holder is not None else "another run"
            progress.update(task, description=f"waiting {waited:.0f} s for {who}")

        report = run_pipeline(settings, spark=spark, on_batch=on_batch, on_wait=on_wait)
    return report


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
    from ledger_engine.errors import BatchFailed, CheckpointMismatch, LedgerBusy

    if args.wait is not None:
        settings = settings.with_overrides(run_wait_seconds=args.wait)
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
    _print_run(report)
    if not args.audit:
        return 0
    audit_report, page = _audit(settings, _written_by("ledger run --audit"), run=_added(report))
    _print_audit(audit_report, page)
    return 0 if audit_report.passed else 1


def _written_by(command: str):
    """The provenance of the pages `command` writes: it, on this host, by this user."""
    from ledger_engine.audit.report.provenance import Provenance

    return Provenance.from_command(command)


def _added(report):
    """The batches a pipeline run (its `PipelineReport`) committed, for its audit's page."""
    from ledger_engine.audit.report.provenance import BatchSpan, RunBatches

    return RunBatches(BatchSpan.covering(b.batch_id for b in report.batches if b.committed))


def _audit(settings: Settings, written_by, full: bool = False, ledger=None, run=None):
    """The batch audit (the batches since the last passing audit), or the full audit, of
    `ledger` (default: built once, from the settings, for the whole audit); its page says it
    was `written_by` this command, and which batches the pipeline `run` before it added."""
    from ledger_engine.audit.runner import run_audits
    from ledger_engine.pipeline.faults import FaultSwitch

    what = "full audit" if full else "batch audit"
    faults = FaultSwitch.from_setting(settings.fault)
    with console.status(f"running the {what}: Merkle trees, hash chain, Great Expectations"):
        return run_audits(
            settings, ledger=ledger, faults=faults, full=full, written_by=written_by, run=run
        )


def _print_audit(report, page) -> None:
    from rich.markup import escape

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
    report, page = _audit(settings, _written_by(command), full=args.full)
    _print_audit(report, page)
    return 0 if report.passed else 1


def cmd_verify(settings: Settings, args: argparse.Namespace) -> int:
    """Prove the system of record from PostgreSQL alone: the batch hash chain, every table's
    Merkle tree (down to the keys that differ) and the batch counts; with --replay, also
    re-execute the whole stored event log and compare everything. Exit 1 on any finding."""
    from ledger_engine.apps import load_ledger
    from ledger_engine.audit.verify import verify_ledger
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
    from ledger_engine.audit.replay import replay_checks

    with _progress() as progress:
        task = progress.add_task("replay: events re-executed", total=None)

        def on_progress(at) -> None:
            progress.update(task, completed=at.events_done, total=at.events_total)
            if at.phase == "tables":
                progress.update(task, description=f"replay: comparing table {at.table}")

        return replay_checks(engine, ledger, on_progress)


def _print_checks(checks: list, seconds: float) -> int:
    """Every check with all its findings; 0 if all passed, else 1."""
    from rich.markup import escape

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
    import webbrowser

    from ledger_engine.audit.report import latest_report

    page = latest_report(settings.reports)
    if page is None:
        console.print(f"no audit report in {settings.reports} yet: run `ledger audit`")
        return 1
    console.print(str(page), soft_wrap=True, markup=False)
    if args.open and not webbrowser.open(page.as_uri()):
        console.print("no browser to open it with here; the path is above")
    return 0


def cmd_demo(settings: Settings, args: argparse.Namespace) -> int:
    """Generate the ledger's sample events, run the pipeline, run the audits, print a
    summary."""
    from ledger_engine.apps import load_ledger
    from ledger_engine.errors import CheckpointMismatch, NoSampleEvents

    watch = Stopwatch()
    ledger = load_ledger(settings.app)
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
        written_by = _written_by("ledger demo")  # its audit page and its reconciliation page
        audit_report, page = _audit(settings, written_by, ledger=ledger, run=_added(run_report))
        _print_audit(audit_report, page)
        _demo_reconciliation(settings, ledger, written_by, spark)
    finally:
        spark.stop()
    console.print(f"demo finished in {watch.elapsed():.1f} s")
    _print_next_steps(ledger)
    return 0 if audit_report.passed else 1


def _spark_session(settings: Settings):
    """A Spark session as the settings describe it, started with a status line."""
    from ledger_engine.runtime.spark.session import build_session

    with console.status("starting Spark"):
        return build_session(
            settings.spark_master,
            driver_host=settings.spark_driver_host,
            driver_memory=settings.spark_driver_memory,
        )


def _demo_reconciliation(settings: Settings, ledger, written_by, spark) -> None:
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
    console.print(
        "open breaks: ledger breaks; work one: ledger breaks match ID ID --note TEXT, or"
        " ledger breaks write-off ID --note TEXT; reconcile new statements: ledger reconcile",
        markup=False,
        soft_wrap=True,
    )


def _print_next_steps(ledger) -> None:
    """How to look at what the demo committed, in this ledger's own names."""
    queries = [f"ledger balance KEY --table {shlex.quote(next(iter(ledger.tables)))}"]
    queries += [
        f"ledger psql -c {shlex.quote(f'SELECT * FROM {view.sql_name} LIMIT 10')}"
        for view in ledger.views.values()
    ] or ["ledger psql -c 'SELECT * FROM ledger_rows LIMIT 10'"]
    console.print("query what was committed:\n  " + "\n  ".join(queries), markup=False)


def cmd_balance(settings: Settings, args: argparse.Namespace) -> int:
    """Print one row of a declared table (default: the first the ledger declares, the bank's
    accounts) as committed, with the batch that last changed it; an amount reads as money in
    the table's declared unit ("1,234.56 EUR"), or with thousands separators where it has none."""
    from ledger_engine.apps import load_ledger
    from ledger_engine.core.money import money_text
    from ledger_engine.core.records import canonical_json
    from ledger_engine.store.database import open_views

    ledger = load_ledger(settings.app)
    table = args.table or next(iter(ledger.tables))
    if table not in ledger.tables:
        console.print(f"ledger {ledger.name!r} declares no table {table!r}", markup=False)
        return 2
    engine = open_views(settings, ledger)
    try:
        with engine.connect() as conn:
            row = conn.execute(
                text(
                    "SELECT value, last_batch_id FROM ledger_rows"
                    " WHERE table_name = :table AND key = :key"
                ),
                {"table": table, "key": args.key},
            ).first()
    finally:
        engine.dispose()
    if row is None:
        console.print(f"no row {args.key!r} in {table!r}", markup=False)
        return 1
    declared = ledger.tables[table]
    value = (
        money_text(row.value, declared.unit)
        if declared.value_type is int
        else canonical_json(row.value)
    )
    console.print(f"{args.key}: {value} (last changed in batch {row.last_batch_id})", markup=False)
    return 0


def cmd_reconcile(settings: Settings, args: argparse.Namespace) -> int:
    """Load the statements that have landed in each source's inbox folder (named below, and
    by `ledger statements`) and reconcile each source (--dry-run: show what would match,
    record nothing)."""
    from collections import Counter

    from ledger_engine.apps import load_ledger
    from ledger_engine.cli_statements import print_inboxes
    from ledger_engine.errors import SourcesError

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
        _reconciliation_page(settings, ledger, sources, report, _written_by("ledger reconcile"))
    return 0


def _sources(settings: Settings, ledger):
    from ledger_engine.reconcile.job import declared_sources

    return declared_sources(settings, ledger)


def _reconcile(settings: Settings, ledger, sources, *, dry_run: bool, spark=None):
    from ledger_engine.reconcile.job import run_reconciliation

    with console.status("reconciling: statements, matching on Spark, breaks"):
        return run_reconciliation(
            settings, ledger, sources, who=f"ledger ({_who()})", dry_run=dry_run, spark=spark
        )


def _reconciliation_page(settings: Settings, ledger, sources, report, written_by) -> None:
    """Write the page of the runs `report` recorded beside the audit pages, saying it was
    `written_by` this command; print its path."""
    from ledger_engine.audit.report.reconciliation import write_reconciliation_page
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


def _land_demo_statement(settings: Settings, ledger, sources, tag: str) -> None:
    """Land a sample statement (`ledger statements sample`'s) of the first camt.053 source."""
    from ledger_engine.cli_statements import describe_sample
    from ledger_engine.errors import NoSampleStatement
    from ledger_engine.reconcile.inbox import land_statement
    from ledger_engine.reconcile.sample import first_camt053_source, sample_statement
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


def _who() -> str:
    import getpass
    import socket

    return f"{getpass.getuser()}@{socket.gethostname()}"


def _print_reconciliation(report, *, dry_run: bool) -> None:
    from collections import Counter

    for loaded in report.files:
        console.print(
            f"{loaded.source} / {loaded.file_name}: {loaded.outcome}"
            f" ({loaded.entries} entries, {loaded.rejected} rejected)",
            markup=False,
        )
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


def cmd_breaks(settings: Settings, args: argparse.Namespace) -> int:
    """List the open breaks, oldest first (exit 1 if there are any); or work one: `match`
    breaks by hand, `write-off` a break (an adjusting event through the ledger), show a
    break's `history`."""
    action = getattr(args, "breaks_action", None)
    if action == "match":
        return _resolve_breaks(settings, args, match=True)
    if action == "write-off":
        return _resolve_breaks(settings, args, match=False)
    if action == "history":
        return _break_history(settings, args.break_id)
    return _list_breaks(settings)


def _list_breaks(settings: Settings) -> int:
    """The open breaks, oldest first, a table per source, amounts as money in the source's
    unit (from its declaration; integers where none is declared), narrow enough for a
    terminal of 80 columns; the write-offs posted and not yet settled under it."""
    from ledger_engine.audit.report.formats import plural
    from ledger_engine.reconcile.matching import reason_words
    from ledger_engine.store.database import open_views
    from ledger_engine.store.reconciliation import list_open_breaks

    engine = open_views(settings)
    try:
        found = list_open_breaks(engine)
    finally:
        engine.dispose()
    units = _source_units(settings)
    now = datetime.now(UTC)
    console.print(f"Open breaks: {len(found)}", markup=False)
    for source in dict.fromkeys(row.source for row in found):
        unit = units.get(source)
        title = f"{source}{f' ({unit.code})' if unit else ''}, oldest first"
        table = Table(title=title, box=box.SIMPLE, pad_edge=False)
        for column in ("id", "reason", "account", "amount", "ref / request", "age"):
            # A narrow column wraps its text, a long reference included: nothing is cut off.
            justify = "right" if column in ("amount", "age") else "left"
            table.add_column(column, justify=justify, overflow="fold")
        rows = [r for r in found if r.source == source]
        for row in rows:
            table.add_row(
                str(row.break_id),
                reason_words(row.reason),
                row.account or "",
                _break_amount(row.statement_amount, row.ledger_amount, unit),
                row.statement_reference or row.request_id or "",
                plural((now - row.opened_at).days, "day"),
            )
        console.print(table)
        for row in (r for r in rows if r.write_off_request_id):
            console.print(
                f"break {row.break_id}: write-off posted as {row.write_off_request_id};"
                " the next run and reconciliation settle it",
                markup=False,
            )
    return 1 if found else 0


def _source_units(settings: Settings) -> dict[str, Unit]:
    """Each declared source's unit; none where the ledger declares no sources."""
    from ledger_engine.apps import load_ledger
    from ledger_engine.errors import SourcesError
    from ledger_engine.reconcile.job import declared_sources

    try:
        sources = declared_sources(settings, load_ledger(settings.app))
    except (FileNotFoundError, SourcesError):
        return {}
    return sources.units


def _break_amount(statement: int | None, ledger: int | None, unit: Unit | None) -> str:
    """A break's amount as money without its code (the table's title names it): the one side
    there is, or both sides where they differ ("55.00 vs 50.00": statement, then ledger)."""

    def money(units: int) -> str:
        return money_text(units, unit).removesuffix(f" {unit.code}" if unit else "")

    sides = [money(units) for units in (statement, ledger) if units is not None]
    return " vs ".join(sides)


def _resolve_breaks(settings: Settings, args: argparse.Namespace, *, match: bool) -> int:
    """`ledger breaks match` / `write-off`: exit 2, saying why, when it is refused."""
    from ledger_engine.apps import load_ledger
    from ledger_engine.errors import ResolutionRefused, SourcesError
    from ledger_engine.reconcile.job import declared_sources
    from ledger_engine.reconcile.resolve import manual_match, write_off
    from ledger_engine.store.database import open_store

    ledger = load_ledger(settings.app)
    who = args.who or _who()
    engine = open_store(settings, ledger)
    try:
        if match:
            match_id = manual_match(engine, args.break_ids, who=who, note=args.note)
            console.print(f"matched by hand: match {match_id}", markup=False)
            return 0
        posting = write_off(
            engine,
            declared_sources(settings, ledger),
            settings.inbox,
            args.break_id,
            who=who,
            note=args.note,
        )
    except (ResolutionRefused, SourcesError, FileNotFoundError) as refused:
        console.print(f"refused: {refused}", markup=False)
        return 2
    finally:
        engine.dispose()
    if posting.request_id is None:
        console.print(f"break {posting.break_id} written off: nothing to adjust", markup=False)
    else:
        landed = "landed again" if posting.again else "landed"
        console.print(
            f"break {posting.break_id}: adjusting event {posting.request_id}"
            f" ({posting.amount:+d} to {posting.account}) {landed} in {settings.inbox};"
            " `ledger run` commits it, then `ledger reconcile` settles the break",
            markup=False,
            soft_wrap=True,
        )
    return 0


def _break_history(settings: Settings, break_id: int) -> int:
    from ledger_engine.store.break_resolutions import break_history
    from ledger_engine.store.database import open_store

    engine = open_store(settings)
    try:
        steps = break_history(engine, break_id)
    finally:
        engine.dispose()
    if not steps:
        console.print(f"no break {break_id}", markup=False)
        return 1
    table = Table(title=f"Break {break_id}")
    for column in ("step", "action", "who", "when (UTC)", "note", "run", "match", "request"):
        table.add_column(column)
    for step in steps:
        cells = (step.seq, step.action, step.who, _utc(step.at), step.note, step.run_id)
        table.add_row(
            *("" if v is None else str(v) for v in (*cells, step.match_id)), step.request_id or ""
        )
    console.print(table)
    return 0


def cmd_request(settings: Settings, args: argparse.Namespace) -> int:
    """Print what became of one request id; exit 1 if no committed event carried it."""
    from rich.markup import escape

    from ledger_engine.core.records import canonical_json
    from ledger_engine.store.database import open_views
    from ledger_engine.store.requests import request_outcome

    engine = open_views(settings)
    try:
        found = request_outcome(engine, args.request_id)
    finally:
        engine.dispose()
    if found is None:
        console.print(f"no request {escape(repr(args.request_id))}")
        return 1
    # Client-chosen ids, streams and payloads are printed escaped: "[" must not become markup.
    where = f"batch {found.batch_id}, position {found.position}"
    console.print(
        f"{escape(found.request_id)} ({escape(str(found.stream))}): [bold]{found.outcome}[/]"
        f" in {where}, committed {_utc(found.committed_at)}",
        soft_wrap=True,
    )
    if found.rejection_reason is not None:
        reason = f"{found.rejection_reason}: {found.rejection_detail}"
        console.print(f"reason: {escape(reason)}", soft_wrap=True)
    for payload in found.results:
        console.print(f"result: {escape(canonical_json(payload))}", soft_wrap=True)
    if found.duplicates:
        table = Table(title=f"{len(found.duplicates)} duplicate(s) of {where}, not run")
        for column in ("batch", "position", "kind", "committed (UTC)"):
            table.add_column(column, no_wrap=True)
        for d in found.duplicates:
            at = _utc(d.committed_at).removesuffix(" UTC")  # narrow enough for 80 columns
            table.add_row(str(d.batch_id), str(d.position), d.kind, at)
        console.print(table)
    return 0


def _utc(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def cmd_psql(settings: Settings, args: argparse.Namespace) -> int:
    """Open psql (the one shipped with the embedded server) on the ledger's schema."""
    from ledger_engine.apps import load_ledger
    from ledger_engine.store.database import database_url, ledger_url, libpq_url
    from ledger_engine.store.embedded import psql_path

    url = libpq_url(ledger_url(database_url(settings), load_ledger(settings.app)))
    psql = str(psql_path())
    os.execv(psql, [psql, url, *args.psql_args])
    return 0  # not reached


def cmd_db(settings: Settings, args: argparse.Namespace) -> int:
    """`ledger db url` prints the ledger's URL (its database and schema); `ledger db migrate`
    brings its schema up to date (the core migrations and the ledger's declared tables and
    views); `ledger db stop` stops the embedded server; `ledger db create-login NAME --role
    reader|writer|auditor` creates a login user."""
    from ledger_engine.apps import load_ledger
    from ledger_engine.store.database import database_url, ledger_url, libpq_url
    from ledger_engine.store.embedded import stop_embedded

    if args.action == "create-login":
        return _create_login(settings, args)
    if args.action == "migrate":
        return _migrate(settings)
    if args.action == "url":
        # libpq's form, which psql and every PostgreSQL client (SQLAlchemy too) reads.
        url = libpq_url(ledger_url(database_url(settings), load_ledger(settings.app)))
        console.print(url, soft_wrap=True, markup=False)
    elif settings.database_url:
        console.print("LEDGER_DATABASE_URL is set: no embedded server to stop")
    else:
        stopped = stop_embedded(settings.pgdata)
        console.print("stopped" if stopped else "not running")
    return 0


def _migrate(settings: Settings) -> int:
    from ledger_engine.apps import load_ledger
    from ledger_engine.store.database import connect, database_url, ledger_url
    from ledger_engine.store.migrations import migrate
    from ledger_engine.store.schema import apply_declared_schema

    ledger = load_ledger(settings.app)
    engine = connect(ledger_url(database_url(settings), ledger))
    try:
        core = migrate(engine)
        declared = apply_declared_schema(engine, ledger)
    finally:
        engine.dispose()
    console.print(f"core migrations applied now: {', '.join(core) or 'none'}", markup=False)
    generated = f"version {declared}" if declared else "none (up to date)"
    console.print(f"ledger {ledger.name!r}: generated migration {generated}", markup=False)
    return 0


def _create_login(settings: Settings, args: argparse.Namespace) -> int:
    """Create a login in one of the access roles (sql/0007_roles.sql); the password comes from
    LEDGER_NEW_LOGIN_PASSWORD or a prompt, never from the command line, and is never shown."""
    from ledger_engine.errors import LoginError
    from ledger_engine.store.database import open_store
    from ledger_engine.store.roles import check_login_name, create_login, login_password, login_url

    if not args.name or not args.role:
        console.print("usage: ledger db create-login NAME --role reader|writer|auditor")
        return 2
    try:
        check_login_name(args.name)  # before asking for a password
        password = login_password(os.environ)
        engine = open_store(settings)  # migrated: the roles exist
        try:
            create_login(engine, args.name, args.role, password)
            url = login_url(engine.url.render_as_string(hide_password=False), args.name)
        finally:
            engine.dispose()
    except LoginError as exc:
        console.print(str(exc), style="red", markup=False)
        return 1
    console.print(f"created login {args.name!r} in role {args.role}; connect with:")
    console.print(url, soft_wrap=True, markup=False)
    return 0


def cmd_airflow(settings: Settings, args: argparse.Namespace) -> int:
    """Run Airflow here (scheduler, DAG processor, triggerer, UI on 127.0.0.1) with this
    project's DAGs and settings; print the URL and login; Ctrl-C stops every process it
    started."""
    from ledger_engine.operations.airflow_local import run_airflow

    if args.port is not None:
        settings = settings.with_overrides(airflow_port=args.port)
    return run_airflow(settings, lambda line: console.print(line, markup=False, soft_wrap=True))


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


class LedgerParser(argparse.ArgumentParser):
    """An argument parser whose help may end with text computed when it is shown
    (`more_help`), such as the statement inboxes of the sources declared now."""

    def __init__(self, *args, more_help: Callable[[], str] | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.more_help = more_help

    def format_help(self) -> str:
        text = super().format_help()
        return text if self.more_help is None else f"{text}\n{self.more_help()}\n"


def build_parser() -> argparse.ArgumentParser:
    from ledger_engine.cli_statements import add_statements_parser, inboxes_help

    parser = LedgerParser(prog="ledger", description=__doc__)
    parser.add_argument("--spark-master", help="Spark master URL (default: LEDGER_SPARK_MASTER)")
    commands = parser.add_subparsers(dest="command", required=True)

    def sample_options(p: argparse.ArgumentParser, events: int) -> None:
        p.add_argument("--events", type=_positive, default=events, help="number of events")
        p.add_argument(
            "--rows",
            "--accounts",
            dest="rows",
            type=_positive,
            default=1000,
            help="how many rows the events spread over (accounts, for the bank)",
        )
        p.add_argument("--seed", type=int, default=7, help="random seed")

    demo = commands.add_parser("demo", help=cmd_demo.__doc__)
    sample_options(demo, 20_000)
    demo.set_defaults(handler=cmd_demo)
    generate = commands.add_parser("generate", help=cmd_generate.__doc__)
    sample_options(generate, 10_000)
    generate.add_argument("--tag", help="run tag for file names and request ids")
    generate.set_defaults(handler=cmd_generate)
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
    audit = commands.add_parser("audit", help=cmd_audit.__doc__)
    audit.add_argument(
        "--full",
        action="store_true",
        help="the full audit: every Merkle tree recomputed and the whole-ledger suite",
    )
    audit.set_defaults(handler=cmd_audit)
    verify = commands.add_parser("verify", help=cmd_verify.__doc__)
    verify.add_argument(
        "--replay", action="store_true", help="also re-execute the stored event log and compare"
    )
    verify.set_defaults(handler=cmd_verify)
    report = commands.add_parser("report", help=cmd_report.__doc__)
    report.add_argument("--open", action="store_true", help="open it in a web browser")
    report.set_defaults(handler=cmd_report)
    balance = commands.add_parser("balance", help=cmd_balance.__doc__)
    balance.add_argument("key", help="the row's key (an account id, for the bank)")
    balance.add_argument("--table", help="a declared table (default: the first declared)")
    balance.set_defaults(handler=cmd_balance)
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
    add_statements_parser(commands, inboxes_help, _positive)
    breaks = commands.add_parser("breaks", help=cmd_breaks.__doc__)
    breaks.set_defaults(handler=cmd_breaks)
    breaks_actions = breaks.add_subparsers(dest="breaks_action", metavar="ACTION")
    matched = breaks_actions.add_parser("match", help="match open breaks' items by hand")
    matched.add_argument("break_ids", type=int, nargs="+", metavar="BREAK_ID")
    written_off = breaks_actions.add_parser(
        "write-off", help="post an adjusting event that makes the ledger agree"
    )
    written_off.add_argument("break_id", type=int)
    for resolving in (matched, written_off):
        resolving.add_argument("--note", required=True, help="why (kept in the break's history)")
        resolving.add_argument("--who", help="who decides (default: user@host)")
    history = breaks_actions.add_parser("history", help="every change of a break's state")
    history.add_argument("break_id", type=int)
    request = commands.add_parser("request", help=cmd_request.__doc__)
    request.add_argument("request_id")
    request.set_defaults(handler=cmd_request)
    # Everything after `ledger psql` goes to psql itself (see `main`).
    commands.add_parser("psql", help=cmd_psql.__doc__).set_defaults(handler=cmd_psql)
    db = commands.add_parser("db", help=cmd_db.__doc__)
    db.add_argument("action", choices=["url", "migrate", "stop", "create-login"])
    db.add_argument("name", nargs="?", help="create-login: the new login's name")
    db.add_argument("--role", choices=["reader", "writer", "auditor"], help="create-login")
    db.set_defaults(handler=cmd_db)
    airflow = commands.add_parser("airflow", help=cmd_airflow.__doc__)
    airflow.add_argument(
        "--port", type=int, help="the UI's port (default: LEDGER_AIRFLOW_PORT; 0: a free one)"
    )
    airflow.set_defaults(handler=cmd_airflow)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if args.command == "psql":
        args.psql_args = extra
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    settings = Settings.from_env()
    if args.spark_master:
        settings = settings.with_overrides(spark_master=args.spark_master)
    return args.handler(settings, args)


if __name__ == "__main__":
    sys.exit(main())
