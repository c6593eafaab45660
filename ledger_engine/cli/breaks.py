"""`ledger breaks`: the open breaks reconciliation left, and working one: matching breaks by
hand, writing one off (an adjusting event through the ledger), and a break's history."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime

from rich import box
from rich.markup import escape
from rich.table import Table

from ledger_engine.apps import load_ledger
from ledger_engine.cli.amounts import amount_json
from ledger_engine.cli.output import console, say, utc
from ledger_engine.cli.parsing import Commands, add_json_option
from ledger_engine.cli.reconciliation import who
from ledger_engine.config import Settings
from ledger_engine.core.money import Unit, money_text
from ledger_engine.errors import ResolutionRefused, SourcesError
from ledger_engine.reconcile.matching import reason_words


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
        return _break_history(settings, args.break_id, as_json=args.json)
    return _list_breaks(settings, as_json=args.json)


def _list_breaks(settings: Settings, *, as_json: bool = False) -> int:
    """The open breaks, oldest first, a table per source, amounts as money in the source's
    unit (from its declaration; integers where none is declared), narrow enough for a
    terminal of 80 columns; the write-offs posted and not yet settled under it."""
    # Imported here: the store and the audit's pages (SQLAlchemy, Jinja2) slow `ledger --help`.
    from ledger_engine.reconcile.storage.runs import list_open_breaks
    from ledger_engine.report.formats import plural
    from ledger_engine.store.database import open_views

    engine = open_views(settings)
    try:
        found = list_open_breaks(engine)
    finally:
        engine.dispose()
    units = _source_units(settings)
    if as_json:
        say(json.dumps({"open_breaks": [_break_json(row, units.get(row.source)) for row in found]}))
        return 1 if found else 0
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
                escape(row.account or ""),
                _break_amount(row.statement_amount, row.ledger_amount, unit),
                escape(row.statement_reference or row.request_id or ""),
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


def _break_json(row, unit: Unit | None) -> dict:
    """An open break for --json: its amounts as exact decimals in its source's unit."""

    def amount(units: int | None) -> dict | None:
        return None if units is None else amount_json(units, unit)

    return {
        "break_id": row.break_id,
        "source": row.source,
        "reason": row.reason,
        "account": row.account,
        "statement_amount": amount(row.statement_amount),
        "ledger_amount": amount(row.ledger_amount),
        "reference": row.statement_reference,
        "request_id": row.request_id,
        "opened_at": row.opened_at.isoformat(),
        "write_off_request_id": row.write_off_request_id,
    }


def _source_units(settings: Settings) -> dict[str, Unit]:
    """Each declared source's unit; none where the ledger declares no sources."""
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
    from ledger_engine.reconcile.job import declared_sources
    from ledger_engine.reconcile.resolve import manual_match, write_off
    from ledger_engine.store.database import open_store

    ledger = load_ledger(settings.app)
    decided_by = args.who or who()
    engine = open_store(settings, ledger)
    try:
        if match:
            match_id = manual_match(engine, args.break_ids, who=decided_by, note=args.note)
            console.print(f"matched by hand: match {match_id}", markup=False)
            return 0
        posting = write_off(
            engine,
            declared_sources(settings, ledger),
            settings.inbox,
            args.break_id,
            who=decided_by,
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


def _break_history(settings: Settings, break_id: int, *, as_json: bool = False) -> int:
    from ledger_engine.reconcile.storage.resolutions import break_history
    from ledger_engine.store.database import open_store

    engine = open_store(settings)
    try:
        steps = break_history(engine, break_id)
    finally:
        engine.dispose()
    if as_json:
        say(json.dumps({"break_id": break_id, "steps": [_step_json(step) for step in steps]}))
        return 0 if steps else 1
    if not steps:
        console.print(f"no break {break_id}", markup=False)
        return 1
    table = Table(title=f"Break {break_id}")
    for column in ("step", "action", "who", "when (UTC)", "note", "run", "match", "request"):
        table.add_column(column)
    for step in steps:
        cells = (step.seq, step.action, step.who, utc(step.at), step.note, step.run_id)
        # What people typed (a note, a name) is text, never markup: "[ref 7]" stays.
        table.add_row(
            *(escape("" if v is None else str(v)) for v in (*cells, step.match_id)),
            escape(step.request_id or ""),
        )
    console.print(table)
    return 0


def _step_json(step) -> dict:
    return {
        "step": step.seq,
        "action": step.action,
        "who": step.who,
        "at": step.at.isoformat(),
        "note": step.note,
        "run_id": step.run_id,
        "match_id": step.match_id,
        "request_id": step.request_id,
    }


# -- the parser -------------------------------------------------------------------------------


def add_breaks_parser(commands: Commands) -> None:
    """`ledger breaks [match BREAK_ID... | write-off BREAK_ID | history BREAK_ID]`."""
    breaks = commands.add_parser("breaks", help=cmd_breaks.__doc__)
    breaks.set_defaults(handler=cmd_breaks)
    add_json_option(breaks)
    actions = breaks.add_subparsers(dest="breaks_action", metavar="ACTION")
    matched = actions.add_parser("match", help="match open breaks' items by hand")
    matched.add_argument("break_ids", type=int, nargs="+", metavar="BREAK_ID")
    written_off = actions.add_parser(
        "write-off", help="post an adjusting event that makes the ledger agree"
    )
    written_off.add_argument("break_id", type=int)
    for resolving in (matched, written_off):
        resolving.add_argument("--note", required=True, help="why (kept in the break's history)")
        resolving.add_argument("--who", help="who decides (default: user@host)")
    history = actions.add_parser("history", help="every change of a break's state")
    history.add_argument("break_id", type=int)
    add_json_option(history)
