"""Great Expectations' console noise, kept out of the way of the audit's own output."""

from __future__ import annotations

import contextlib
import io
import logging
import sys
from collections.abc import Iterator
from typing import TextIO

_BATCH_WARNING = "unexpected_rows_query should contain the {batch} parameter"


class _WithoutBatchWarning(io.TextIOBase):
    """A stdout passing everything through except the warning Great Expectations prints each
    time it loads an `UnexpectedRowsExpectation` without `{batch}` (the rules that read only the
    logs, on purpose)."""

    def __init__(self, target: TextIO) -> None:
        self._target = target
        self._after_warning = False

    def write(self, text: str) -> int:
        dropped = _BATCH_WARNING in text or (self._after_warning and text == "\n")
        self._after_warning = _BATCH_WARNING in text
        if not dropped:
            self._target.write(text)
        return len(text)

    def flush(self) -> None:
        self._target.flush()

    # What terminal-aware writers (the CLI's progress display) ask of stdout: the real answers.
    def isatty(self) -> bool:
        return self._target.isatty()

    def fileno(self) -> int:
        return self._target.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._target, "encoding", None) or "utf-8"


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Keep Great Expectations' console noise (that warning, its info logs) out of the way."""
    gx_logger = logging.getLogger("great_expectations")
    level = gx_logger.level
    gx_logger.setLevel(max(level, logging.WARNING))
    try:
        with contextlib.redirect_stdout(_WithoutBatchWarning(sys.stdout)):
            yield
    finally:
        gx_logger.setLevel(level)
