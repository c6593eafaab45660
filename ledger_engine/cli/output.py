"""What every `ledger` command prints through: the one rich console (tests narrow it, so
there must be one), and the small helpers several commands share."""

from __future__ import annotations

import errno
import os
import sys
from datetime import UTC, datetime

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

# Output that is no terminal (a log, a pipe, a script) has no width to fit: nothing is wrapped
# or cut there (a long line, an address, a table's note arrive whole). A terminal wraps at its
# width, as a person reading it expects.
UNWRAPPED = 100_000


class _Console(Console):
    """Rich's console, except where the output's reader has gone (`ledger ... | head`): rich
    would exit with status 1, which our table reads as "found something"; the command's own
    failure handling (`cli.failures`) gives it the closed pipe's status instead."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, "the output's reader closed the pipe")


def _console(*, stderr: bool = False) -> Console:
    shown = _Console(stderr=stderr)
    if shown.is_terminal:
        return shown
    return _Console(stderr=stderr, width=UNWRAPPED, soft_wrap=True)


def silence_stdout() -> None:
    """Point stdout at /dev/null once its reader has gone, so that what is still buffered,
    flushed as Python exits, fails no second time."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


console = _console()
# What failed, for a person: on stderr, so that a script reading stdout (--json) is not misled.
errors = _console(stderr=True)


def say(text: str, style: str | None = None) -> None:
    """Print `text` as it is: no markup, no highlighting, never wrapped (paths stay whole)."""
    console.print(text, style=style, markup=False, highlight=False, soft_wrap=True)


def complain(text: str) -> None:
    """Print `text` on stderr as it is (no markup, never wrapped): a failure's sentence."""
    errors.print(text, markup=False, highlight=False, soft_wrap=True)


def progress() -> Progress:
    """A progress bar on the console: description, bar, done of total, time elapsed; on a
    terminal only (a log keeps the lines printed above it, not the bar's last drawing)."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=not console.is_terminal,
    )


def utc(moment: datetime) -> str:
    """`moment` in UTC, to the second ("2024-05-01 12:00:00 UTC")."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
