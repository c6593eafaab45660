"""What a person reads when a `ledger` command cannot do its work: one or two lines saying what
failed and what to do, and the exit status (`cli.statuses`) that says the same to a script.
The traceback is for whoever asks for it (`--traceback`, LEDGER_TRACEBACK=1)."""

from __future__ import annotations

from dataclasses import dataclass

from ledger_engine.cli.statuses import (
    EXIT_BUG,
    EXIT_DATABASE,
    EXIT_FOUND,
    EXIT_INTERRUPTED,
    EXIT_PIPE_CLOSED,
    EXIT_SETTING,
)
from ledger_engine.config import Settings
from ledger_engine.errors import LedgerError

TRACEBACK_HINT = "run again with --traceback (or LEDGER_TRACEBACK=1) to see where"


class SettingProblem(Exception):
    """A setting that cannot be used; the message names it and says how to fix it."""


@dataclass(frozen=True)
class Failure:
    """What to tell a person (`lines`: what failed, then what to do) and the exit status."""

    status: int
    lines: tuple[str, ...]


def explain(exc: BaseException, settings: Settings | None, command: str) -> Failure:
    """The failure `exc` means for `ledger command` run with `settings` (None: unread)."""
    if isinstance(exc, KeyboardInterrupt):
        return Failure(EXIT_INTERRUPTED, (f"ledger {command}: interrupted",))
    if isinstance(exc, SettingProblem):
        return Failure(EXIT_SETTING, tuple(str(exc).split("\n")))
    reached = _unreachable(exc)
    if reached is not None:
        return Failure(EXIT_DATABASE, _database_lines(reached, settings))
    missing = _missing_table(exc)
    if missing is not None:
        return Failure(
            EXIT_FOUND,
            (
                f"ledger {command}: the ledger has no tables in this database yet ({missing})",
                "`ledger db migrate` creates them; `ledger run` commits the events landed in "
                "the inbox (and creates them too)",
            ),
        )
    if isinstance(exc, BrokenPipeError):  # the output's reader went away: nobody to tell
        return Failure(EXIT_PIPE_CLOSED, ())
    if isinstance(exc, OSError):  # a folder or file the settings name cannot be used
        return Failure(
            EXIT_SETTING,
            (
                f"ledger {command}: cannot use a file or folder: {exc}",
                "check the folders the settings name (LEDGER_DATA_DIR, LEDGER_INBOX, "
                "LEDGER_PGDATA, LEDGER_REPORTS, ...) and their permissions",
            ),
        )
    if isinstance(exc, LedgerError):  # the platform's own refusals say what happened
        return Failure(EXIT_FOUND, (_first_line(exc), TRACEBACK_HINT))
    return Failure(
        EXIT_BUG,
        (
            f"ledger {command} stopped on an unexpected error: {_first_line(exc)}",
            f"this is likely a bug: {TRACEBACK_HINT}, and report what it prints",
        ),
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def _missing_table(exc: BaseException) -> str | None:
    """The server's words where `exc` is a query of a table the ledger has not created in
    this database (a command that only reads, run before any migration); None otherwise."""
    from psycopg2 import errors

    seen: BaseException | None = exc
    while seen is not None:
        inner = getattr(seen, "orig", None) or seen
        if isinstance(inner, errors.UndefinedTable):
            return " ".join(str(inner).split("\n")[0].split())
        seen = seen.__cause__ or seen.__context__
    return None


def _unreachable(exc: BaseException) -> str | None:
    """The driver's words where `exc` (or what caused it) is a failure to reach the
    database; None otherwise."""
    import psycopg2
    from sqlalchemy.exc import OperationalError

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OperationalError | psycopg2.OperationalError):
            inner = getattr(seen, "orig", None) or seen
            return " ".join(str(inner).split())
        seen = seen.__cause__ or seen.__context__
    return None


def _database_lines(words: str, settings: Settings | None) -> tuple[str, ...]:
    """What failed (the driver's own words, which name the host, port and database) and what
    to do about it."""
    words = words.removeprefix("(psycopg2.OperationalError) ")
    detail = words.split(" failed: ", 1)[-1].removeprefix("FATAL:").strip()
    if detail.startswith("database") and "does not exist" in detail:
        name = detail.split('"')[1] if '"' in detail else "it"
        todo = (
            f"create it (createdb {name}, or CREATE DATABASE {name} in psql), or set "
            "LEDGER_DATABASE_URL to a database that exists"
        )
    elif "authentication" in detail or "password" in detail or detail.startswith("role"):
        todo = "check the user and password in LEDGER_DATABASE_URL"
    elif settings is not None and settings.database_url is None:
        todo = "the embedded server did not answer: run `ledger db stop`, then try again"
    else:
        todo = (
            "is PostgreSQL running there? Start it, or fix the host and port in "
            "LEDGER_DATABASE_URL (unset it to use the embedded server)"
        )
    return (f"cannot reach the database {_where(settings)}: {words}", todo)


def _where(settings: Settings | None) -> str:
    """The database the settings name, its password hidden."""
    from sqlalchemy import make_url

    if settings is None:
        return "of LEDGER_DATABASE_URL"
    if settings.database_url is None:
        return f"(the embedded server in {settings.pgdata})"
    return f"({make_url(settings.database_url).render_as_string(hide_password=True)})"
