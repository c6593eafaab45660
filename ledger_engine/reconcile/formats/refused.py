"""The one exception a statement parser raises inside itself: an entry refused, with the
reason and the sentence its rejection will carry. It never leaves a parser, which turns it
into an `EntryRejection` beside the entry's raw bytes."""

from __future__ import annotations

from ledger_engine.reconcile.entries import REASONS


class Refused(Exception):
    """One entry's rejection, raised where the problem is seen."""

    def __init__(self, reason: str, detail: str) -> None:
        assert reason in REASONS, reason
        super().__init__(detail)
        self.reason = reason
        self.detail = detail
