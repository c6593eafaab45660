"""The `ledger` command's argument parser class and the argument types its commands share."""

from __future__ import annotations

import argparse
from collections.abc import Callable


class LedgerParser(argparse.ArgumentParser):
    """An argument parser whose help may end with text computed when it is shown
    (`more_help`), such as the statement inboxes of the sources declared now."""

    def __init__(self, *args, more_help: Callable[[], str] | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.more_help = more_help

    def format_help(self) -> str:
        text = super().format_help()
        return text if self.more_help is None else f"{text}\n{self.more_help()}\n"


def add_json_option(parser: argparse.ArgumentParser) -> None:
    """`--json`: the answer as one JSON document on stdout, for scripts."""
    parser.add_argument(
        "--json", action="store_true", help="print the answer as JSON (amounts: exact decimals)"
    )


def positive(text: str) -> int:
    """An argument that is a whole number of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


# The sub-commands that `add_subparsers` returns, to which each group adds its commands
# (argparse gives their type no public name).
Commands = argparse._SubParsersAction
