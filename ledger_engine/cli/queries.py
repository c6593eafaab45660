"""`ledger balance`, `ledger request` and `ledger psql`: reading what was committed, a row of
a declared table, what became of a request id, or anything in psql."""

from __future__ import annotations

import argparse
import json
import os

from rich.markup import escape
from rich.table import Table

from ledger_engine.apps import load_ledger
from ledger_engine.cli.amounts import (
    amount_json,
    result_amounts,
    result_words,
    stream_unit,
)
from ledger_engine.cli.output import console, say, utc
from ledger_engine.cli.parsing import Commands, add_json_option
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
    declared = ledger.tables[table]
    if args.json:
        return _balance_json(table, args.key, row, declared.unit)
    if row is None:
        console.print(f"no row {args.key!r} in {table!r}", markup=False)
        return 1
    value = (
        money_text(row.value, declared.unit)
        if declared.value_type is int
        else canonical_json(row.value)
    )
    console.print(f"{args.key}: {value} (last changed in batch {row.last_batch_id})", markup=False)
    return 0


def _balance_json(table: str, key: str, row, unit) -> int:
    """`ledger balance --json`: the row's amount as an exact decimal and its unit (and its
    minor units), or its JSON value where the table holds no integers; exit 1 if none."""
    if row is None:
        say(json.dumps({"table": table, "key": key, "found": False}))
        return 1
    answer: dict = {"table": table, "key": key}
    if type(row.value) is int:
        answer |= amount_json(row.value, unit) | {"minor_units": row.value}
    else:
        answer["value"] = row.value
    say(json.dumps(answer | {"last_batch_id": row.last_batch_id}))
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
    unit = stream_unit(load_ledger(settings.app), found.stream) if found else None
    if args.json:
        return _request_json(args.request_id, found, unit)
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
        console.print(f"result: {escape(result_words(payload, unit))}", soft_wrap=True)
    if found.duplicates:
        table = Table(title=f"{len(found.duplicates)} duplicate(s) of {where}, not run")
        for column in ("batch", "position", "kind", "committed (UTC)"):
            table.add_column(column, no_wrap=True)
        for d in found.duplicates:
            at = utc(d.committed_at).removesuffix(" UTC")  # narrow enough for 80 columns
            table.add_row(str(d.batch_id), str(d.position), d.kind, at)
        console.print(table)
    return 0


def _request_json(request_id: str, found, unit) -> int:
    """`ledger request --json`: the outcome, each result's payload with its amounts as exact
    decimals in the stream's unit, and the duplicates; exit 1 if no event carried it."""
    if found is None:
        say(json.dumps({"request_id": request_id, "found": False}))
        return 1
    rejection = (
        None
        if found.rejection_reason is None
        else {"reason": found.rejection_reason, "detail": found.rejection_detail}
    )
    answer = {
        "request_id": found.request_id,
        "stream": found.stream,
        "outcome": found.outcome,
        "batch_id": found.batch_id,
        "position": found.position,
        "committed_at": found.committed_at.isoformat(),
        "rejection": rejection,
        "results": [{"payload": p, "amounts": result_amounts(p, unit)} for p in found.results],
        "duplicates": [
            {
                "batch_id": d.batch_id,
                "position": d.position,
                "kind": d.kind,
                "committed_at": d.committed_at.isoformat(),
            }
            for d in found.duplicates
        ],
    }
    say(json.dumps(answer))
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
    add_json_option(balance)
    balance.set_defaults(handler=cmd_balance)


def add_request_parser(commands: Commands) -> None:
    """`ledger request REQUEST_ID`."""
    request = commands.add_parser("request", help=cmd_request.__doc__)
    request.add_argument("request_id")
    add_json_option(request)
    request.set_defaults(handler=cmd_request)


def add_psql_parser(commands: Commands) -> None:
    """`ledger psql [PSQL ARGUMENTS...]`: everything after `psql` goes to psql itself (`main`
    passes on what the parser does not know)."""
    commands.add_parser("psql", help=cmd_psql.__doc__).set_defaults(handler=cmd_psql)
