"""`ledger balance`, `ledger request` and `ledger psql`: reading what was committed, a row of
a declared table, what became of a request id, or anything in psql."""

from __future__ import annotations

import argparse
import os

from rich.markup import escape
from rich.table import Table

from ledger_engine.apps import load_ledger
from ledger_engine.cli.output import console, utc
from ledger_engine.cli.parsing import Commands
from ledger_engine.config import Settings
from ledger_engine.core.money import money_text
from ledger_engine.core.records import canonical_json


def cmd_balance(settings: Settings, args: argparse.Namespace) -> int:
    """Print one row of a declared table (default: the first the ledger declares, the bank's
    accounts) as committed, with the batch that last changed it; an amount reads as money in
    the table's declared unit ("1,234.56 EUR"), or with thousands separators where it has none."""
    # Imported here: the store (SQLAlchemy, psycopg2, pgserver) slows `ledger --help`.
    from ledger_engine.store.database import open_views
    from ledger_engine.store.rows import committed_row

    ledger = load_ledger(settings.app)
    table = args.table or next(iter(ledger.tables))
    if table not in ledger.tables:
        console.print(f"ledger {ledger.name!r} declares no table {table!r}", markup=False)
        return 2
    engine = open_views(settings, ledger)
    try:
        row = committed_row(engine, table, args.key)
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


def cmd_request(settings: Settings, args: argparse.Namespace) -> int:
    """Print what became of one request id; exit 1 if no committed event carried it."""
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
        f" in {where}, committed {utc(found.committed_at)}",
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
            at = utc(d.committed_at).removesuffix(" UTC")  # narrow enough for 80 columns
            table.add_row(str(d.batch_id), str(d.position), d.kind, at)
        console.print(table)
    return 0


def cmd_psql(settings: Settings, args: argparse.Namespace) -> int:
    """Open psql (the one shipped with the embedded server) on the ledger's schema."""
    from ledger_engine.store.database import database_url, ledger_url, libpq_url
    from ledger_engine.store.embedded import psql_path

    url = libpq_url(ledger_url(database_url(settings), load_ledger(settings.app)))
    psql = str(psql_path())
    os.execv(psql, [psql, url, *args.psql_args])
    return 0  # not reached


# -- the parsers ------------------------------------------------------------------------------


def add_balance_parser(commands: Commands) -> None:
    """`ledger balance KEY [--table TABLE]`."""
    balance = commands.add_parser("balance", help=cmd_balance.__doc__)
    balance.add_argument("key", help="the row's key (an account id, for the bank)")
    balance.add_argument("--table", help="a declared table (default: the first declared)")
    balance.set_defaults(handler=cmd_balance)


def add_request_parser(commands: Commands) -> None:
    """`ledger request REQUEST_ID`."""
    request = commands.add_parser("request", help=cmd_request.__doc__)
    request.add_argument("request_id")
    request.set_defaults(handler=cmd_request)


def add_psql_parser(commands: Commands) -> None:
    """`ledger psql [PSQL ARGUMENTS...]`: everything after `psql` goes to psql itself (`main`
    passes on what the parser does not know)."""
    commands.add_parser("psql", help=cmd_psql.__doc__).set_defaults(handler=cmd_psql)
