"""The order of an outcome's matches and breaks, as `MatchingOutcome` states it, shared by both
matchers so that they can be compared with `==`."""

from __future__ import annotations

from ledger_engine.reconcile.matching import BREAK_REASONS, Break, ItemId, Match


def match_order(priority: int, m: Match) -> tuple[int, ItemId]:
    """A match's place: by its rule's priority, then its smallest statement id."""
    return (priority, m.statement_ids[0])


def break_order(b: Break) -> tuple[int, ItemId]:
    """A break's place: by reason (BREAK_REASONS' order), then its statement id, else its
    ledger id."""
    return (BREAK_REASONS.index(b.reason), (b.statement_ids or b.ledger_ids)[0])
