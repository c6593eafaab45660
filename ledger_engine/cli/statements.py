"""`ledger statements`: where each source's statements go, what became of them, landing one
whole, and writing a sample of one; and the statement inboxes that `ledger reconcile` and its
`--help` name."""

from __future__ import annotations

import argparse
import hashlib
import json
from dataclasses import asdict, fields, replace
from datetime import UTC, datetime
from pathlib import Path

from ledger_engine.apps import load_ledger
from ledger_engine.cli.output import say
from ledger_engine.cli.parsing import Commands, add_json_option, positive
from ledger_engine.config import Settings
from ledger_engine.errors import NoSampleStatement, SourcesError
from ledger_engine.landing.files import land_whole
from ledger_engine.reconcile.generated_statement import KINDS, DifferencePlan

LISTED_FILES = 20  # files listed per source, newest first, by default
STATEMENTS_HELP = """Where each declared source's statement files land, and what became of
them: the files loaded, rejected (nothing in them could be read) or duplicates, and those
waiting for the next `ledger reconcile`. `land` lands a file whole for a named source; `sample`
writes a statement of a source from the committed movements, with differences injected."""


# -- the inboxes, for `ledger reconcile` and the help -------------------------------------------


def inboxes_help() -> str:
    """The statement inboxes of the configured ledger's sources, for a command's `--help`; or,
    where they cannot be read, where they are declared and why not."""
    # Imported here: reconciliation's stack (SQLAlchemy, pgserver) slows `ledger --help`.
    from ledger_engine.reconcile.job import declared_sources, sources_file
    from ledger_engine.reconcile.statement_inbox import inbox_folder

    try:
        settings = Settings.from_env()
        ledger = load_ledger(settings.app)
        where = sources_file(settings, ledger)
        sources = declared_sources(settings, ledger)
    except Exception as why:  # the help must show, whatever is wrong with the settings
        return (
            f"statement inboxes: the sources are declared in LEDGER_RECONCILIATION (default "
            f"expectations/<ledger schema>/reconciliation.toml), and cannot be read now: {why}"
        )
    lines = [f"statement inboxes (sources declared in {where}; a folder per source):"]
    lines += [
        f"  {name!r} ({source.format}): {inbox_folder(settings.statements, source)}/"
        for name, source in sources.sources.items()
    ]
    return "\n".join(lines)


def print_inboxes(settings: Settings, sources, loaded: dict[str, int]) -> None:
    """Each source's inbox folder, with how many files of it the run just loaded (`loaded`,
    by source): where to put files when nothing landed."""
    from ledger_engine.reconcile.statement_inbox import inbox_folder

    for name, source in sources.sources.items():
        files = loaded.get(name, 0)
        news = f"{files} file(s) taken" if files else "nothing new landed"
        say(f"{name}: inbox {inbox_folder(settings.statements, source)}/ ({news})")


# -- ledger statements ------------------------------------------------------------------------


def cmd_statements(settings: Settings, args: argparse.Namespace) -> int:
    """List each source's inbox folder and the files landed there (default); `land` a file
    for a source; write a `sample` statement of a source."""
    from ledger_engine.reconcile.job import declared_sources

    ledger = load_ledger(settings.app)
    try:
        sources = declared_sources(settings, ledger)
    except (SourcesError, FileNotFoundError) as wrong:
        say(str(wrong))
        return 2
    action = getattr(args, "statements_action", None)
    if action is None:
        if args.json:
            return _list_json(settings, ledger, sources, args.limit)
        return _list(settings, ledger, sources, args.limit)
    source = sources.sources.get(args.source)
    if source is None:
        declared = ", ".join(map(repr, sources.sources)) or "none"
        say(f"no source {args.source!r} is declared; declared: {declared}")
        return 2
    if action == "land":
        return _land(settings, ledger, source, args.file, args.name)
    return _sample(settings, ledger, source, args)


def _list(settings: Settings, ledger, sources, limit: int) -> int:
    from ledger_engine.reconcile.statement_inbox import inbox_folder, waiting_files
    from ledger_engine.reconcile.storage.statements import landing_counts, landings
    from ledger_engine.store.database import open_store

    engine = open_store(settings, ledger)
    try:
        for name, source in sources.sources.items():
            counts = landing_counts(engine, name)
            waiting = waiting_files(engine, source, settings.statements)
            say(f"{name} ({source.format}, table {source.table}):")
            say(f"  inbox {inbox_folder(settings.statements, source)}/")
            say(
                f"  files: {counts.loaded} loaded, {counts.rejected} rejected, "
                f"{counts.duplicate} duplicate, {len(waiting)} waiting for the next run; "
                f"entries: {counts.entries} loaded, {counts.rejected_entries} rejected"
            )
            for path in waiting:
                say(f"  {path.name}: waiting")
            for landing in landings(engine, name, limit):
                say(f"  {landing.file_name}: {_outcome(landing)}")
    finally:
        engine.dispose()
    return 0


def _list_json(settings: Settings, ledger, sources, limit: int) -> int:
    """`ledger statements --json`: each source, its inbox, its counts, the files waiting and
    the last `limit` files landed."""
    from ledger_engine.reconcile.statement_inbox import inbox_folder, waiting_files
    from ledger_engine.reconcile.storage.statements import landing_counts, landings
    from ledger_engine.store.database import open_store

    engine = open_store(settings, ledger)
    try:
        listed = [
            {
                "name": name,
                "format": source.format,
                "table": source.table,
                "inbox": f"{inbox_folder(settings.statements, source)}/",
                "counts": asdict(landing_counts(engine, name)),
                "waiting": [p.name for p in waiting_files(engine, source, settings.statements)],
                "files": [
                    asdict(landing) | {"landed_at": landing.landed_at.isoformat()}
                    for landing in landings(engine, name, limit)
                ],
            }
            for name, source in sources.sources.items()
        ]
    finally:
        engine.dispose()
    say(json.dumps({"sources": listed}))
    return 0


def _outcome(landing) -> str:
    when = landing.landed_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    counts = f"{landing.entries} entries, {landing.rejected} rejected"
    if landing.outcome == "duplicate":
        return f"duplicate of {landing.first_name} ({counts} there), landed {when}"
    return f"{landing.outcome} ({counts}), {when}"


def _land(settings: Settings, ledger, source, file: Path, name: str | None) -> int:
    """Land a copy of `file` whole in the source's folder, never over a file lying there."""
    from ledger_engine.reconcile.statement_inbox import inbox_folder, land_statement_file
    from ledger_engine.reconcile.storage.statements import loaded_as
    from ledger_engine.store.database import open_store

    if not file.is_file():
        say(f"no file {file}")
        return 2
    try:
        landed = land_statement_file(settings.statements, source, file, name)
    except FileExistsError:
        target = inbox_folder(settings.statements, source) / (name or file.name)
        say(
            f"a file named {target.name} lies in {target.parent}/ already, and is never "
            "replaced (it may not be loaded yet): land this one under another name (--as NAME)"
        )
        return 2
    except ValueError as wrong:
        say(str(wrong))
        return 2
    say(f"landed {file} for source {source.name!r} as {landed}")
    engine = open_store(settings, ledger)
    try:
        first = loaded_as(engine, source.name, hashlib.sha256(landed.read_bytes()).hexdigest())
    finally:
        engine.dispose()
    if first is not None:
        say(f"its content was loaded before, as {first}: the next run records it a duplicate")
    say(_next_run(settings))
    return 0


def _next_run(settings: Settings) -> str:
    return (
        "the next `ledger reconcile` loads it and says what became of it (so does the "
        "ledger_reconcile DAG, which its watcher starts within "
        f"{settings.statement_poll_seconds:g} s); `ledger statements` lists it meanwhile"
    )


def _sample(settings: Settings, ledger, source, args: argparse.Namespace) -> int:
    """Write a sample statement of `source` from the committed movements; land it, or write
    it to `--output`."""
    from ledger_engine.reconcile.sample import sample_statement
    from ledger_engine.reconcile.statement_inbox import land_statement
    from ledger_engine.store.database import open_store

    stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
    engine = open_store(settings, ledger)
    try:
        sample = sample_statement(
            engine,
            source,
            accounts=args.accounts,
            differences=args.differences,
            seed=args.seed,
            message_id=f"LEDGER-SMPL-{stamp}",
        )
    except NoSampleStatement as refused:
        say(str(refused))
        return 2
    finally:
        engine.dispose()
    if args.output is not None:
        path = land_whole(args.output, lambda handle: handle.write(sample.document))
    else:
        path = land_statement(settings.statements, source, f"sample-{stamp}.xml", sample.document)
    describe_sample(sample, "wrote")
    if args.output is not None:
        say(f"written to {path} (not landed: `ledger statements land {path} --source ...`)")
    else:
        say(f"landed as {path}; {_next_run(settings)}")
    return 0


def describe_sample(sample, done: str) -> None:
    """What a sample statement holds, in one line ("`done` a statement of ..."): the demo's
    too."""
    injected = ", ".join(f"{kind} {n}" for kind, n in sorted(sample.injected.items()) if n)
    say(
        f"{done} a statement of {sample.entries} entries for {', '.join(sample.accounts)} "
        f"({sample.source}), {sample.first_day} to {sample.last_day} (closing balances as of "
        f"{sample.last_day}), differences injected: {injected or 'none'}"
    )


# -- the parser -------------------------------------------------------------------------------


def differences_plan(text: str) -> DifferencePlan:
    """`--differences`: `none`, or `KIND=N[,KIND=N...]` (the kinds not named: none)."""
    if text.strip().lower() == "none":
        return DifferencePlan.none()
    counts: dict[str, int] = {}
    for part in text.split(","):
        kind, _, count = part.strip().partition("=")
        if kind not in KINDS or not count.strip().isdigit():
            raise argparse.ArgumentTypeError(
                f"{part.strip()!r}: give none, or KIND=N[,KIND=N...] with KIND one of "
                f"{', '.join(KINDS)}"
            )
        counts[kind] = int(count)
    return replace(DifferencePlan.none(), **counts)


def add_statements_parser(commands: Commands) -> None:
    """`ledger statements [land | sample]`, each one's help ending with the sources' inboxes."""
    statements = commands.add_parser(
        "statements",
        help=cmd_statements.__doc__,
        description=STATEMENTS_HELP,
        more_help=inboxes_help,
    )
    statements.add_argument(
        "--limit", type=positive, default=LISTED_FILES, help="files listed per source, newest first"
    )
    statements.set_defaults(handler=cmd_statements)
    add_json_option(statements)
    actions = statements.add_subparsers(dest="statements_action", metavar="ACTION")
    land = actions.add_parser(
        "land",
        help="land a statement file whole in a source's inbox folder",
        more_help=inboxes_help,
    )
    land.add_argument("file", type=Path, help="the statement file (camt.053 or CSV)")
    land.add_argument("--source", required=True, help='the declared source ("Main bank")')
    land.add_argument("--as", dest="name", help="the name it lands as (default: its own)")
    sample = actions.add_parser(
        "sample",
        help="write a statement of a source from the committed movements, with differences",
        more_help=inboxes_help,
    )
    sample.add_argument("--source", required=True, help='the declared source ("Main bank")')
    sample.add_argument(
        "--accounts",
        type=positive,
        default=5,
        help="how many of the source's rows (default 5; the rows it declares, if it does)",
    )
    kinds = ", ".join(f.name for f in fields(DifferencePlan))
    sample.add_argument(
        "--differences",
        type=differences_plan,
        default=DifferencePlan(),
        help=f"none, or KIND=N[,KIND=N...] (default: one of each); kinds: {kinds}",
    )
    sample.add_argument("--seed", type=int, default=7, help="random seed of the differences")
    sample.add_argument(
        "--output", type=Path, help="write the file here instead of landing it in the inbox"
    )
