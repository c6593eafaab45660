"""A statement written by the generator (`reconcile.generator`) and the truth about it: the
entries of the file, the matches and breaks a correct reconciliation must conclude, each with
the difference that caused it, and the balances the statement states.

`DifferencePlan` says how many differences of each kind to inject (`KINDS`); a
`GeneratedStatement` is what came out, and `truth(file_id)` what a correct run over the file,
loaded as `file_id`, concludes, in `MatchingOutcome`'s order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from datetime import date

from ledger_engine.reconcile.entries import StatementEntry
from ledger_engine.reconcile.matching import (
    BREAK_REASONS,
    Break,
    ItemId,
    Match,
    MatchingOutcome,
    StatementItem,
)
from ledger_engine.reconcile.rules import Rule

MIRRORED = "mirrored"  # the kind of a match with no difference: the entry as the ledger has it


@dataclass(frozen=True)
class DifferencePlan:
    """How many differences of each kind to inject (at most; see the module's docstring)."""

    missing_in_statement: int = 1
    unknown_entries: int = 1
    drift_inside: int = 1
    drift_outside: int = 1
    shift_inside: int = 1
    shift_outside: int = 1
    splits: int = 1
    merges: int = 1
    duplicates: int = 1

    def __post_init__(self) -> None:
        for f in fields(self):
            assert getattr(self, f.name) >= 0, f.name

    @classmethod
    def none(cls) -> DifferencePlan:
        """A plan of no differences: every movement mirrored."""
        return cls(**{f.name: 0 for f in fields(cls)})


KINDS = tuple(f.name for f in fields(DifferencePlan))
ONE_OF_EACH = DifferencePlan()  # the default plan: one difference of each kind (frozen: shared)


@dataclass(frozen=True)
class GeneratedEntry:
    """One entry of the generated file, at `position` (1-based, across its statements)."""

    position: int
    account: str  # the ledger key
    statement_account: str  # the statement's account id (an IBAN, ...)
    amount: int
    booking_date: date
    value_date: date
    reference: str | None
    servicer_reference: str
    description: str | None

    def item(self, file_id: int) -> StatementItem:
        """The entry as matching sees it once its file is loaded as `file_id`."""
        return StatementItem(
            (file_id, self.position),
            self.account,
            self.amount,
            self.value_date,
            self.reference,
            self.description,
        )


@dataclass(frozen=True)
class ExpectedMatch:
    """A match a correct run must make, and the difference (`kind`) it shows."""

    kind: str
    rule: str
    account: str
    positions: tuple[int, ...]
    ledger_ids: tuple[ItemId, ...]
    amount_difference: int
    date_difference_days: int

    def match(self, file_id: int) -> Match:
        """The match, with the statement ids of the file loaded as `file_id`."""
        return Match(
            self.rule,
            self.account,
            tuple((file_id, p) for p in self.positions),
            self.ledger_ids,
            self.amount_difference,
            self.date_difference_days,
        )


@dataclass(frozen=True)
class ExpectedBreak:
    """A break a correct run must name, and the difference (`kind`) that caused it."""

    kind: str
    reason: str
    account: str
    positions: tuple[int, ...]
    ledger_ids: tuple[ItemId, ...]
    amount_difference: int | None = None

    def break_(self, file_id: int) -> Break:
        """The break, with the statement ids of the file loaded as `file_id`."""
        return Break(
            self.reason,
            self.account,
            tuple((file_id, p) for p in self.positions),
            self.ledger_ids,
            self.amount_difference,
        )


@dataclass(frozen=True)
class ExpectedBalance:
    """A statement's balances of one ledger row, as written (closing as of the end of
    `closing_date`, UTC, the way camt.053's bare dates read)."""

    account: str
    opening: int
    closing: int
    opening_date: date
    closing_date: date


@dataclass(frozen=True)
class GeneratedStatement:
    """The generated camt.053 file (`document`), its entries, and the truth about them."""

    document: bytes
    message_id: str
    entries: tuple[GeneratedEntry, ...]
    balances: tuple[ExpectedBalance, ...]
    matches: tuple[ExpectedMatch, ...]
    breaks: tuple[ExpectedBreak, ...]
    rules: tuple[Rule, ...]
    injected: Mapping[str, int]  # per kind of DifferencePlan, how many were injected

    def statement_items(self, file_id: int) -> tuple[StatementItem, ...]:
        """The entries as matching sees them once the file is loaded as `file_id`."""
        return tuple(e.item(file_id) for e in self.entries)

    def truth(self, file_id: int) -> MatchingOutcome:
        """What a correct run over the file loaded as `file_id` concludes, in `MatchingOutcome`'s
        order."""
        priority = {r.name: r.priority for r in self.rules}
        matches = sorted(
            (m.match(file_id) for m in self.matches),
            key=lambda m: (priority[m.rule], m.statement_ids[0]),
        )
        breaks = sorted(
            (b.break_(file_id) for b in self.breaks),
            key=lambda b: (BREAK_REASONS.index(b.reason), (b.statement_ids or b.ledger_ids)[0]),
        )
        return MatchingOutcome(tuple(matches), tuple(breaks))


def statement_items(entries: Iterable[StatementEntry], file_id: int) -> list[StatementItem]:
    """Loaded statement entries (of the file `file_id`) as matching sees them: id
    `(file_id, position)`, dated by the value date if the entry has one, else its booking
    date."""
    return [
        StatementItem(
            (file_id, e.position),
            e.account,
            e.amount,
            e.value_date or e.booking_date,
            e.reference,
            e.description,
        )
        for e in entries
    ]
