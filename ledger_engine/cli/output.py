"""What every `ledger` command prints through: the one rich console (tests narrow it, so
there must be one), and the small helpers several commands share."""

from __future__ import annotations

from datetime import UTC, datetime

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

# Output that is no terminal (a log, a pipe, a script) has no width to fit: nothing is wrapped
# or cut there (a long line, an address, a table's note arrive whole). A terminal wraps at its
# width, as a person reading it expects.
UNWRAPPED = 100_000


def _console(*, stderr: bool = False) -> Console:
    shown = Console(stderr=stderr)
    if shown.is_terminal:
        return shown
    return Console(stderr=stderr, width=UNWRAPPED, soft_wrap=True)


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
