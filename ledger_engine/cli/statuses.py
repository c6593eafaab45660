"""The exit statuses of the `ledger` command, each with what it means: the one table that
`ledger --help` ends with and docs/exit-status.md writes out (a test holds the two together)."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FOUND = 1  # the command ran and found something wrong, or nothing by the name given
EXIT_REFUSED = 2  # the command line or its input was refused (argparse's own status too)
EXIT_SETTING = 3
EXIT_DATABASE = 4
EXIT_BUG = 70  # EX_SOFTWARE
EXIT_BUSY = 75  # EX_TEMPFAIL: try again
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C
EXIT_PIPE_CLOSED = 141  # 128 + SIGPIPE, as a shell reports a pipe whose reader went away

EXIT_STATUSES: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "done; every check passed"),
    (
        EXIT_FOUND,
        "done, and found something: a failed audit check, open breaks, a failed batch, "
        "no such row, request or report",
    ),
    (
        EXIT_REFUSED,
        "refused: a wrong option or argument, a file that is not there, a refused match or "
        "write-off, a statement source not declared, a checkpoint of another database",
    ),
    (
        EXIT_SETTING,
        "a setting is wrong: LEDGER_APP, LEDGER_DATABASE_URL, a number out of range, a "
        "folder that cannot be used (ledger_engine/config.py lists them)",
    ),
    (
        EXIT_DATABASE,
        "the database cannot be reached: server down, database missing, login refused",
    ),
    (
        EXIT_BUG,
        "an unexpected error (a bug): run again with --traceback and report what it prints",
    ),
    (EXIT_BUSY, "another run holds the ledger: try again later, or wait longer (--wait)"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C)"),
    (
        EXIT_PIPE_CLOSED,
        "the output's reader stopped reading (`ledger ... | head`): stopped quietly",
    ),
)


def exit_status_help() -> str:
    """The table of exit statuses, for the end of `ledger --help`."""
    rows = [f"  {status:<3} {meaning}" for status, meaning in EXIT_STATUSES]
    return "exit status:\n" + "\n".join(rows)
