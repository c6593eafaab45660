"""Matching statement entries with ledger entries: what a match is, what a break is, and the
exact rule by which a run decides them (two implementations keep it: `reference`, a plain
Python reading of this text that is the oracle, and `spark`, which scales).

**Sides.** A *statement side* item is a `StatementItem` (a loaded statement entry); a *ledger
side* item is a `LedgerItem` (one change of one ledger row by one applied event: the row's
delta, with the event's reference, description and value date where it gave them). Items are
matched only within one `account` (a ledger row of the source's table). An item's *date* is
its value date if it has one, else its booking date (statement) or its commit date (ledger).

**Similarity** of two texts: both are lower-cased (`str.lower`, which Spark's `lower` agrees
with) and their runs of white space (Unicode White_Space) made one space, stripped (this is
*folding*: `similarity.fold`); then `1 - levenshtein(a, b) / max(len(a), len(b))` over code
points (1.0 for two empty texts).
A criterion on a field that either side lacks (`None`) is not met.

**A rule's candidates.** For a one-to-one rule, every pair (statement item s, ledger item l)
of one account, both unmatched by earlier rules, such that:
- amount: `|s.amount - l.amount| <= rule.amount.allowed(s.amount)`;
- date, if the rule has a window: `|s.date - l.date| <= window_days`;
- reference, description, if the rule names them: similarity >= the rule's threshold
  (a threshold of 1.0 means equal after folding).

A grouped rule first forms groups on its grouped side (`one_to_many`: the ledger side;
`many_to_one`: the statement side) among that side's unmatched items: items of one account
with the same value of `group_by` (a text folded as for similarity, or the date), two or more
items per group (an item lacking that field is in no group). A group stands for one item
whose amount is the sum of its members', whose date is its members' latest date, and whose
`group_by` field is the shared value; its other text fields are `None`. Its candidates are
then formed as above, and a grouped item is matched or not as a whole.

**Choosing among candidates** (the same inputs always give the same matches). Each candidate
has the cost `(|amount difference|, |date difference in days|, -reference similarity,
-description similarity, s's id, l's id)` (a similarity not compared counts 0; a group's id is
its smallest member id). Candidates are taken in increasing cost; one is kept if neither of
its items (nor any member of its group) was kept already. This greedy matching is what the
oracle computes; the Spark matcher reaches the same set by rounds of mutual best candidates,
which for a strict total order of costs gives the same matches. Rules run in priority order,
each over what earlier rules left.

**Breaks.** After the last rule, what is left:
1. `duplicate`: a statement item identical (account, amount, date, reference, description) to
   an earlier statement item of the same source (by id) that is matched or is itself kept as
   a break of another reason;
2. `amount_mismatch`: an unmatched statement item and an unmatched ledger item of one account
   with equal references (not `None`, equal after folding) whose amounts differ: paired
   greedily by cost as above (without the amount criterion, no similarity compared), one
   break naming both;
3. `missing_in_ledger`: any other unmatched statement item;
4. `missing_in_statement`: any other unmatched ledger item.
Every item of either side ends in exactly one match or exactly one break.

**What a run considers (its scope).** A run of a source matches, by the rules above, the
items of the source that are not yet *settled*, an item being settled once a match of the
source holds it (made by a rule, by hand, or by a write-off) or a break of it was written off:
- every statement entry of the source's loaded files not settled;
- every *movement* (a ledger item as above: a change of a row whose amount is not 0) not
  settled by the source, of each account the source *reconciles*, at or after the source's
  *start*, through the last committed batch. The accounts a source reconciles are the rows it
  declares (`account`, `accounts`), or, where its statements name rows by the ledger's keys,
  every row an entry of its loaded statements has named. Its start is its declaration's
  `from`: a batch id (the movements of that batch and later), a date (the movements dated that
  day or later) or neither (every movement). So an account's movements are considered whenever
  the account first appears (its first statement after earlier runs, an account added to a
  declaration, a new source), from the start, not from the first run that knew the account;
- every item of the source's open breaks (also one before a later start).
An entry left unmatched that is identical (account, amount, date, reference, description) to an
earlier entry of the source that is settled is a `duplicate`, as it would be were the earlier
one in the run. Since every item a run considers ends in a match or a break, the scope of the
run after the last statement and the last batch decides every item; for inputs where each item
has at most one candidate, that outcome is the one a single run over the whole history gives,
whenever runs happened. (A match a run recorded is final: where a better candidate arrives
after it, the order of runs can decide which pair matches.)
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

DUPLICATE = "duplicate"
AMOUNT_MISMATCH = "amount_mismatch"
MISSING_IN_LEDGER = "missing_in_ledger"
MISSING_IN_STATEMENT = "missing_in_statement"
BREAK_REASONS = (DUPLICATE, AMOUNT_MISMATCH, MISSING_IN_LEDGER, MISSING_IN_STATEMENT)
# What a person calls each reason (pages, task logs, `ledger breaks`).
_REASON_WORDS = {
    MISSING_IN_LEDGER: "missing in the ledger",
    MISSING_IN_STATEMENT: "missing in the statement",
    AMOUNT_MISMATCH: "amount mismatch",
    DUPLICATE: "duplicate",
}


def reason_words(reason: str) -> str:
    """A break's reason as a person reads it; a reason not known here, its name in words."""
    return _REASON_WORDS.get(reason, reason.replace("_", " "))


# An item's id: a statement entry's (file_id, position); a ledger change's (batch_id,
# position, seq). Ids order the items of one side totally, which makes every choice unique.
ItemId = tuple[int, ...]


@dataclass(frozen=True)
class StatementItem:
    """A loaded statement entry, as matching sees it."""

    id: ItemId
    account: str
    amount: int
    date: date
    reference: str | None
    description: str | None


@dataclass(frozen=True)
class LedgerItem:
    """One change of a ledger row by an applied event, as matching sees it."""

    id: ItemId
    account: str
    amount: int
    date: date
    reference: str | None
    description: str | None
    request_id: str


@dataclass(frozen=True)
class Match:
    """Statement items matched with ledger items by `rule` (one side holds one item unless
    the rule groups it), with the differences found within the rule's tolerances."""

    rule: str
    account: str
    statement_ids: tuple[ItemId, ...]
    ledger_ids: tuple[ItemId, ...]
    amount_difference: int  # statement total - ledger total
    date_difference_days: int  # |statement date - ledger date|


@dataclass(frozen=True)
class Break:
    """Items left unmatched, with the reason; `amount_mismatch` names one item of each side,
    every other reason one item of one side."""

    reason: str
    account: str
    statement_ids: tuple[ItemId, ...]
    ledger_ids: tuple[ItemId, ...]
    amount_difference: int | None = None  # for amount_mismatch: statement - ledger

    def __post_init__(self) -> None:
        assert self.reason in BREAK_REASONS, self.reason
        sides = (len(self.statement_ids), len(self.ledger_ids))
        expected = {
            AMOUNT_MISMATCH: (1, 1),
            MISSING_IN_STATEMENT: (0, 1),
        }.get(self.reason, (1, 0))
        assert sides == expected, (self.reason, sides)


@dataclass(frozen=True)
class MatchingOutcome:
    """A matching run's result: matches and breaks, each in a deterministic order (by rule
    priority then smallest statement id; breaks by reason, in the order of BREAK_REASONS, then
    statement id, else ledger id; a group's ids in increasing order)."""

    matches: tuple[Match, ...]
    breaks: tuple[Break, ...]
