"""The `ledger` command: demo, generate, run, audit, verify, report, balance, request,
reconcile, statements (`cli.statements`), breaks, psql, db and airflow."""

# (This docstring is `ledger --help`'s description.) A module per group of commands, each
# adding its parsers: pipeline (generate, run, demo), audits (audit, verify, report), queries
# (balance, request, psql), reconciliation (reconcile), statements, breaks, operations (db,
# airflow); they print through `output`'s one console.

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from ledger_engine.cli import audits, breaks, operations, pipeline, queries, reconciliation
from ledger_engine.cli.output import console
from ledger_engine.cli.parsing import Commands, LedgerParser
from ledger_engine.cli.pipeline import EXIT_BUSY
from ledger_engine.cli.statements import add_statements_parser
from ledger_engine.config import Settings

__all__ = ["EXIT_BUSY", "build_parser", "console", "main"]

# Each command's parser, in the order `ledger --help` lists them (the groups interleave).
_COMMANDS: tuple[Callable[[Commands], None], ...] = (
    pipeline.add_demo_parser,
    pipeline.add_generate_parser,
    pipeline.add_run_parser,
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
    parser = LedgerParser(prog="ledger", description=__doc__)
    parser.add_argument("--spark-master", help="Spark master URL (default: LEDGER_SPARK_MASTER)")
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
    settings = Settings.from_env()
    if args.spark_master:
        settings = settings.with_overrides(spark_master=args.spark_master)
    return args.handler(settings, args)
