"""The `ledger` command: demo, generate, run, inbox, rejections, audit, verify, report, balance,
request, reconcile, statements, breaks, psql, db and airflow."""

# (This docstring is `ledger --help`'s description.) A module per group of commands, each
# adding its parsers: pipeline (generate, run, demo), inbox (inbox, rejections), audits (audit,
# verify, report), queries (balance, request, psql), reconciliation (reconcile), statements,
# breaks, operations (db, airflow); they print through `output`'s one console.

from __future__ import annotations

import argparse
import os
import traceback
from collections.abc import Callable, Sequence

from ledger_engine.cli import (
    audits,
    breaks,
    inbox,
    operations,
    pipeline,
    queries,
    reconciliation,
)
from ledger_engine.cli.failures import explain
from ledger_engine.cli.output import complain, console, silence_stdout
from ledger_engine.cli.parsing import Commands, LedgerParser
from ledger_engine.cli.preflight import check_app, check_database_url, read_settings
from ledger_engine.cli.statements import add_statements_parser
from ledger_engine.cli.statuses import EXIT_BUSY, EXIT_PIPE_CLOSED, exit_status_help
from ledger_engine.config import Settings, traceback_setting

__all__ = ["EXIT_BUSY", "build_parser", "console", "main"]

# Each command's parser, in the order `ledger --help` lists them (the groups interleave).
_COMMANDS: tuple[Callable[[Commands], None], ...] = (
    pipeline.add_demo_parser,
    pipeline.add_generate_parser,
    pipeline.add_run_parser,
    inbox.add_inbox_parser,
    inbox.add_rejections_parser,
    audits.add_audit_parser,
    audits.add_verify_parser,
    audits.add_report_parser,
    queries.add_balance_parser,
    reconciliation.add_reconcile_parser,
    add_statements_parser,
    breaks.add_breaks_parser,
    queries.add_request_parser,
    queries.add_psql_parser,
    operations.add_db_parser,
    operations.add_airflow_parser,
)


def build_parser() -> argparse.ArgumentParser:
    """The `ledger` command's parser: its options and every command's."""
    parser = LedgerParser(prog="ledger", description=__doc__, more_help=_exit_help)
    parser.add_argument("--spark-master", help="Spark master URL (default: LEDGER_SPARK_MASTER)")
    parser.add_argument(
        "--traceback",
        action="store_true",
        help="when the command fails, show the traceback too (or set LEDGER_TRACEBACK=1)",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for add_parser in _COMMANDS:
        add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `ledger` command `argv` (default: this process's arguments); its exit status."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if args.command == "psql":
        args.psql_args = extra
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    settings: Settings | None = None
    try:
        settings = read_settings()
        if args.spark_master:
            settings = settings.with_overrides(spark_master=args.spark_master)
        check_database_url(settings)
        if not (args.command == "db" and args.action == "stop"):  # stopping needs no ledger
            check_app(settings)
        return args.handler(settings, args)
    except (Exception, KeyboardInterrupt) as failed:
        failure = explain(failed, settings, args.command)
        if failure.status == EXIT_PIPE_CLOSED:
            silence_stdout()
        # The settings may be what failed: then LEDGER_TRACEBACK is read on its own.
        wanted = settings.traceback if settings is not None else traceback_setting(os.environ)
        if args.traceback or wanted:
            complain(traceback.format_exc().rstrip())
        for line in failure.lines:
            complain(line)
        return failure.status


def _exit_help() -> str:
    """The end of `ledger --help`: the exit statuses, and how to see a failure's traceback."""
    return (
        f"{exit_status_help()}\n\nA failing command says in a line or two what failed and what"
        " to do;\n--traceback (or LEDGER_TRACEBACK=1) shows its traceback too."
    )
