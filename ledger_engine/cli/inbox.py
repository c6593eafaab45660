"""`ledger inbox` and `ledger rejections`: what became of every event file and every line,
without SQL: the files in the inbox taken, waiting and ignored (with why), and the rejected
lines with their file, line, reason and raw bytes; and what `ledger run` says of the inbox it
looked in."""

from __future__ import annotations

import argparse
import base64
import json

from ledger_engine.cli.output import say
from ledger_engine.cli.parsing import Commands, add_json_option, positive
from ledger_engine.config import Settings

REJECTIONS_SHOWN = 1000  # rejected lines listed at most, oldest first, unless --limit


def inbox_files(settings: Settings) -> list:
    """Every file in the inbox with what became of it (`pipeline.inbox_survey`)."""
    # Imported here: the store (SQLAlchemy, psycopg2, pgserver) slows `ledger --help`.
    from ledger_engine.pipeline.inbox_survey import survey_inbox
    from ledger_engine.store.database import open_views

    engine = open_views(settings)
    try:
        return survey_inbox(settings.inbox, engine)
    finally:
        engine.dispose()


def print_left_aside(settings: Settings, committed: int) -> None:
    """After `ledger run`: the inbox it looked in (saying so when it found nothing new) and
    every file in it that the pipeline leaves aside, with why."""
    from ledger_engine.pipeline.inbox_survey import IGNORED, TAKEN, WAITING

    files = inbox_files(settings)
    counts = {state: sum(1 for f in files if f.state == state) for state in (TAKEN, WAITING)}
    ignored = [f for f in files if f.state == IGNORED]
    if not committed and not files:
        say(f"nothing new to commit: the inbox {settings.inbox}/ is empty")
    elif not committed:
        say(
            f"nothing new to commit in the inbox {settings.inbox}/: {counts[TAKEN]} event "
            f"file(s) there taken before, {len(ignored)} ignored"
        )
    for left in ignored:
        say(f"ignored {left.name}: {left.why}")
    if counts[WAITING]:
        say(f"{counts[WAITING]} event file(s) landed while the run ran: the next run takes them")


def cmd_inbox(settings: Settings, args: argparse.Namespace) -> int:
    """List the files in the event inbox: taken by a committed batch, waiting for the next
    run, or ignored, with why (another extension, a name already taken, a hidden name)."""
    from ledger_engine.pipeline.inbox_survey import IGNORED, TAKEN, WAITING

    files = inbox_files(settings)
    if args.json:
        listed = [
            {"name": f.name, "state": f.state, "batch_id": f.batch_id, "why": f.why} for f in files
        ]
        say(json.dumps({"inbox": str(settings.inbox), "files": listed}))
        return 0
    counts = ", ".join(
        f"{sum(1 for f in files if f.state == state)} {state}"
        for state in (TAKEN, WAITING, IGNORED)
    )
    say(f"inbox {settings.inbox}/: {counts}")
    for found in files:
        if found.state == TAKEN:
            say(f"  {found.name}: taken by batch {found.batch_id}")
        elif found.state == WAITING:
            say(f"  {found.name}: waiting for the next run")
        else:
            say(f"  {found.name}: ignored: {found.why}")
    return 0


def cmd_rejections(settings: Settings, args: argparse.Namespace) -> int:
    """List the rejected lines, oldest first: the file and line each came from, its batch,
    the reason and the raw bytes (--file F: of that file; --batch N: of that batch)."""
    from ledger_engine.store.database import open_views
    from ledger_engine.store.rejections import rejected_lines

    engine = open_views(settings)
    try:
        found = rejected_lines(engine, file=args.file, batch=args.batch, limit=args.limit)
    finally:
        engine.dispose()
    if args.json:
        say(json.dumps({"rejections": [_rejection_json(r) for r in found]}))
        return 0
    if not found:
        where = [f"of file {args.file}"] if args.file else []
        where += [f"in batch {args.batch}"] if args.batch is not None else []
        say(" ".join(["no rejected line", *where]))
        return 0
    for rejected in found:
        request = f", request {rejected.request_id}" if rejected.request_id else ""
        say(
            f"{rejected.file} line {rejected.line}: {rejected.reason}: {rejected.detail} "
            f"(batch {rejected.batch_id}, position {rejected.position}{request})"
        )
        say(f"  raw: {_raw_text(rejected.raw)}")
    if len(found) == args.limit:
        say(f"the first {args.limit} shown: narrow with --file or --batch, or raise --limit")
    return 0


def _raw_text(raw: bytes) -> str:
    """Raw bytes as text: UTF-8, any other byte as a backslash escape, the line's end left off."""
    return raw.rstrip(b"\r\n").decode("utf-8", "backslashreplace")


def _rejection_json(rejected) -> dict:
    return {
        "file": rejected.file,
        "line": rejected.line,
        "batch_id": rejected.batch_id,
        "position": rejected.position,
        "stream": rejected.stream,
        "request_id": rejected.request_id,
        "reason": rejected.reason,
        "detail": rejected.detail,
        "raw": _raw_text(rejected.raw),
        "raw_base64": base64.b64encode(rejected.raw).decode("ascii"),
    }


# -- the parsers ------------------------------------------------------------------------------


def add_inbox_parser(commands: Commands) -> None:
    """`ledger inbox [--json]`."""
    inbox = commands.add_parser("inbox", help=cmd_inbox.__doc__, description=cmd_inbox.__doc__)
    add_json_option(inbox)
    inbox.set_defaults(handler=cmd_inbox)


def add_rejections_parser(commands: Commands) -> None:
    """`ledger rejections [--file F] [--batch N] [--limit N] [--json]`."""
    rejections = commands.add_parser(
        "rejections", help=cmd_rejections.__doc__, description=cmd_rejections.__doc__
    )
    rejections.add_argument("--file", help="only the lines of this event file (its name)")
    rejections.add_argument("--batch", type=int, help="only the lines of this batch")
    rejections.add_argument(
        "--limit", type=positive, default=REJECTIONS_SHOWN, help="at most this many lines"
    )
    add_json_option(rejections)
    rejections.set_defaults(handler=cmd_rejections)
