"""Statements written from the ledger's own movements, with known differences injected and
the truth beside them: what a correct reconciliation must conclude for every item.

`statement_with_differences` writes what a bank would report for a list of ledger items (each
mirrored as a booked camt.053 entry with its amount, date, reference and description) and then
injects the differences a plan asks for (`DifferencePlan`):

=======================  ==============================================  =====================
kind                     what the bank reports                           a correct run says
=======================  ==============================================  =====================
missing_in_statement     nothing for a ledger movement                   missing_in_statement
unknown_entries          an entry with no ledger movement (a fee)        missing_in_ledger
drift_inside             the amount off by at most the tolerance         matched (tolerant)
drift_outside            the amount off by more, the same reference      amount_mismatch
shift_inside             the date off by 1..window days                  matched (tolerant)
shift_outside            the date off by more                            missing on each side
splits                   one movement as two entries, same reference     matched (many_to_one)
merges                   several movements (one reference) as one entry  matched (one_to_many)
duplicates               an entry reported twice                         matched + duplicate
=======================  ==============================================  =====================

The truth holds for `default_rules` (with the same tolerance and window), by construction:

- *Cases.* Ledger items are grouped by (account, folded reference); every rule but the last
  needs equal folded references, so items of different groups are never candidates of those
  rules and the greedy choice decides each group on its own. A difference is injected only
  into a group of one ledger item (a merge: of several), its values drawn so that the group's
  outcome under the rules is the one stated (a split's parts each too far from the whole for
  the tolerant rule, a merged entry too far from each member, ...); an unknown entry gets a
  fresh reference of its own.
- *The last rule* (same amount and day, no reference) is the only one across groups. It is
  meant for movements without a reference: those with the same (account, amount, day) are
  mirrored in the order of their ledger ids, so the greedy, which breaks cost ties by ids,
  pairs each with its own. Every item a difference leaves unmatched is drawn (or its
  injection skipped) so that its (account, amount, day) is not found among the other side's
  items left for that rule.
- *Identical entries* are only the injected duplicates: every entry left unmatched has a
  reference no other entry has, but its own original's.

The plan is a most: a kind is injected as often as a suitable ledger item (and suitable values)
are found, and `GeneratedStatement.injected` says how often it was. Everything is drawn from
`random.Random(seed)` over the items in id order, so a seed gives the same bytes and truth.

Statement ids: an entry is known by its 1-based position in the file; once the file is loaded
as `file_id`, its item id is `(file_id, position)` (`GeneratedStatement.statement_items`).

The plan and the statement with its truth are `reconcile.generated_statement`'s types; the
rules are `reconcile.rules.default_rules`, the bank's declared rules too.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta

from ledger_engine.core.records import INT64_MAX, INT64_MIN
from ledger_engine.reconcile.formats.camt053_writer import (
    NOT_PROVIDED,
    CamtEntry,
    CamtStatement,
    text_problem,
    write_camt053,
)
from ledger_engine.reconcile.generated_statement import (
    KINDS,
    MIRRORED,
    ONE_OF_EACH,
    DifferencePlan,
    ExpectedBalance,
    ExpectedBreak,
    ExpectedMatch,
    GeneratedEntry,
    GeneratedStatement,
)
from ledger_engine.reconcile.matching import (
    AMOUNT_MISMATCH,
    DUPLICATE,
    MISSING_IN_LEDGER,
    MISSING_IN_STATEMENT,
    LedgerItem,
)
from ledger_engine.reconcile.matching.similarity import fold
from ledger_engine.reconcile.rules import (
    DEFAULT_TOLERANCE,
    DEFAULT_WINDOW_DAYS,
    EXACT,
    MERGED,
    NO_REFERENCE,
    SPLIT,
    TOLERANT,
    Rule,
    default_rules,
)


def statement_with_differences(
    ledger_items: Sequence[LedgerItem],
    *,
    seed: int,
    account_ids: Mapping[str, str],
    differences: DifferencePlan = ONE_OF_EACH,
    opening_balances: Mapping[str, int] | None = None,
    currency: str = "EUR",
    precision: int = 2,
    amount_tolerance: int = DEFAULT_TOLERANCE,
    window_days: int = DEFAULT_WINDOW_DAYS,
    period: tuple[date, date] | None = None,
    message_id: str | None = None,
) -> GeneratedStatement:
    """The camt.053 statement a bank would send for `ledger_items`, with the differences of
    `differences` injected, and the truth for `default_rules(amount_tolerance, window_days)`.

    `account_ids` maps each ledger key to the statement's account id (one `Stmt` each, in the
    mapping's order; every item's account must be mapped); `opening_balances` gives each
    account's balance before the statement (0 if not given), and the closing balance is the
    opening plus the entries written. `period` is (first day, last day) of the statement
    (default: the items' dates; needed when there are none), within which unknown entries are
    dated. A date shifted by a difference goes earlier where later would pass the last
    movement (or the period's end): the statement closes, and states its closing balances, on
    the day of its last movement. Raises `ValueError` for items the statement cannot mirror:
    an unmapped account, two items with one id, a reference or description camt.053 cannot
    carry unchanged."""
    _check(ledger_items, account_ids)
    rules = default_rules(amount_tolerance, window_days)
    generator = _Generator(
        random.Random(seed),
        sorted(ledger_items, key=lambda item: item.id),
        rules,
        list(account_ids),
        period,
    )
    generator.run(differences)
    message_id = message_id or f"LEDGER-GEN-{seed}"
    return generator.written(
        account_ids, opening_balances or {}, currency, precision, message_id, rules
    )


def _check(items: Sequence[LedgerItem], account_ids: Mapping[str, str]) -> None:
    ids = Counter(item.id for item in items)
    twice = [i for i, n in ids.items() if n > 1]
    if twice:
        raise ValueError(f"ledger item id {twice[0]} given twice")
    for item in items:
        if item.account not in account_ids:
            raise ValueError(f"ledger item {item.id}: account {item.account!r} is not mapped")
        for name, text in (("reference", item.reference), ("description", item.description)):
            if text is None:
                continue
            problem = text_problem(text)
            if problem is None and name == "reference" and text == NOT_PROVIDED:
                problem = "reads as no reference in camt.053"
            if problem is not None:
                raise ValueError(f"ledger item {item.id}: {name} {text!r} {problem}")


# -- drafting ----------------------------------------------------------------------------------


@dataclass
class _Draft:
    """A statement entry before its position is known; `order` places it in its statement."""

    account: str
    amount: int
    day: date
    reference: str | None
    description: str | None
    order: tuple
    copy_of: _Draft | None = None  # a duplicate's original
    position: int = 0


@dataclass
class _Exposure:
    """The (account, amount, day) of every item left for the last rule (same amount and day,
    no reference), per side: an item left unmatched by a difference must not meet an item of
    the other side there, or that rule would pair them."""

    statement: Counter = field(default_factory=Counter)
    ledger: Counter = field(default_factory=Counter)

    def free(self, statement: Iterable[_Draft] = (), ledger: Iterable[LedgerItem] = ()) -> bool:
        """Whether these items, left unmatched, would meet nothing of the other side."""
        return not any((d.account, d.amount, d.day) in self.ledger for d in statement) and not any(
            (i.account, i.amount, i.date) in self.statement for i in ledger
        )

    def add(self, statement: Iterable[_Draft] = (), ledger: Iterable[LedgerItem] = ()) -> None:
        self.statement.update((d.account, d.amount, d.day) for d in statement)
        self.ledger.update((i.account, i.amount, i.date) for i in ledger)


_ATTEMPTS = 20  # draws of a difference's values before trying another ledger item
_UNKNOWN = ("Account maintenance fee", "Interest", "Card chargeback", "Returned direct debit")


class _Generator:
    def __init__(
        self,
        rng: random.Random,
        items: list[LedgerItem],
        rules: tuple[Rule, ...],
        accounts: list[str],
        period: tuple[date, date] | None,
    ) -> None:
        self.rng = rng
        self.items = items
        self.exact, self.tolerant = rules[0], rules[1]
        self.rules = {r.name: r for r in rules}
        self.window = rules[1].window_days or 0
        self.accounts = accounts
        if period is None:
            if not items:
                raise ValueError("a statement of no ledger items needs its period")
            period = (min(i.date for i in items), max(i.date for i in items))
        self.period = period
        # No entry is dated after the last movement or the period's end: the closing date.
        self.last_day = max([period[1], *(i.date for i in items)])
        self.drafts: list[_Draft] = []
        self.matches: list[tuple[str, str, list[_Draft], list[LedgerItem]]] = []
        self.breaks: list[tuple[str, str, list[_Draft], list[LedgerItem]]] = []
        self.injected = dict.fromkeys(KINDS, 0)
        self.exposure = _Exposure()
        # The folded references in use per account, on either side: a fresh one avoids them.
        self.references = {(i.account, fold(i.reference)) for i in items if i.reference}
        groups: dict[tuple[str, str], list[LedgerItem]] = {}
        self.unreferenced: list[LedgerItem] = []
        for item in items:
            if item.reference is None:
                self.unreferenced.append(item)
            else:
                groups.setdefault((item.account, fold(item.reference)), []).append(item)
        self.singles = [g[0] for g in groups.values() if len(g) == 1]
        self.batches = [g for g in groups.values() if len(g) > 1]

    # -- the plan ------------------------------------------------------------------------------

    def run(self, plan: DifferencePlan) -> None:
        # Unreferenced movements are mirrored as they are, and stay exposed to the last rule
        # from the start, so that every injected leftover is checked against them.
        mirrors = [(item, self._mirror(item)) for item in self.unreferenced]
        for item, draft in mirrors:
            self.exposure.add([draft], [item])
        self.rng.shuffle(self.singles)
        self.rng.shuffle(self.batches)
        single_kinds = {
            "missing_in_statement": self._missing,
            "drift_inside": self._drift_inside,
            "drift_outside": self._drift_outside,
            "shift_inside": self._shift_inside,
            "shift_outside": self._shift_outside,
            "splits": self._split,
            "duplicates": self._duplicate,
        }
        for kind in KINDS:
            wanted = getattr(plan, kind)
            if kind == "merges":
                self._inject(kind, wanted, self.batches, self._merge)
            elif kind == "unknown_entries":
                for _ in range(wanted):
                    self.injected[kind] += self._unknown()
            else:
                self._inject(kind, wanted, self.singles, single_kinds[kind])
        for item in self.singles:
            self._plain(item)
        for batch in self.batches:
            for item in batch:
                self._plain(item)
        for item, draft in mirrors:
            self._expect_match(MIRRORED, NO_REFERENCE, [draft], [item])

    def _inject(self, kind: str, wanted: int, pool: list, inject) -> None:
        """Injects `kind` into up to `wanted` members of `pool` (taking them out of it)."""
        tried = []
        while self.injected[kind] < wanted and pool:
            target = pool.pop()
            if inject(target):
                self.injected[kind] += 1
            else:
                tried.append(target)
        pool.extend(reversed(tried))

    # -- kinds ---------------------------------------------------------------------------------

    def _plain(self, item: LedgerItem) -> None:
        self._expect_match(MIRRORED, EXACT, [self._mirror(item)], [item])

    def _missing(self, item: LedgerItem) -> bool:
        if not self.exposure.free(ledger=[item]):
            return False
        self.exposure.add(ledger=[item])
        self._expect_break("missing_in_statement", MISSING_IN_STATEMENT, [], [item])
        return True

    def _drift_inside(self, item: LedgerItem) -> bool:
        for _ in range(_ATTEMPTS):
            drift = self._sign() * self.rng.randint(1, max(1, self.tolerant.amount.tolerance))
            amount = item.amount + drift
            if 0 < abs(drift) <= self.tolerant.amount.allowed(amount) and _fits(amount):
                draft = self._mirror(item, amount=amount)
                self._expect_match("drift_inside", TOLERANT, [draft], [item])
                return True
        return False

    def _drift_outside(self, item: LedgerItem) -> bool:
        tolerance = self.tolerant.amount.tolerance
        for _ in range(_ATTEMPTS):
            drift = self._sign() * self.rng.randint(tolerance + 1, 3 * tolerance + 100)
            amount = item.amount + drift
            if abs(drift) <= self.tolerant.amount.allowed(amount) or not _fits(amount):
                continue
            draft = self._draft(item, amount=amount)
            if self.exposure.free([draft], [item]):
                self._add(draft)
                self.exposure.add([draft], [item])
                self._expect_break("drift_outside", AMOUNT_MISMATCH, [draft], [item])
                return True
        return False

    def _shift_inside(self, item: LedgerItem) -> bool:
        if self.window == 0:
            return False
        day = self._shifted(item.date, self.rng.randint(1, self.window))
        if day is None:
            return False
        self._expect_match("shift_inside", TOLERANT, [self._mirror(item, day=day)], [item])
        return True

    def _shift_outside(self, item: LedgerItem) -> bool:
        for _ in range(_ATTEMPTS):
            day = self._shifted(item.date, self.rng.randint(self.window + 1, self.window + 10))
            if day is None:
                continue
            draft = self._draft(item, day=day)
            if self.exposure.free([draft], [item]):
                self._add(draft)
                self.exposure.add([draft], [item])
                self._expect_break("shift_outside", MISSING_IN_LEDGER, [draft], [])
                self._expect_break("shift_outside", MISSING_IN_STATEMENT, [], [item])
                return True
        return False

    def _split(self, item: LedgerItem) -> bool:
        allowed = self.tolerant.amount.allowed
        for _ in range(_ATTEMPTS):
            first = round(item.amount * self.rng.uniform(0.2, 0.8))
            second = item.amount - first
            # Each part alone must be no candidate of the one-to-one rules: the other part
            # is its difference from the whole.
            if first == second or abs(second) <= allowed(first) or abs(first) <= allowed(second):
                continue
            # The second part a few days later (earlier where later would pass the last day).
            other_day = self._shifted(item.date, self.rng.randint(0, self.window))
            if other_day is None:
                continue
            parts = [
                self._draft(item, amount=first),
                self._draft(item, amount=second, day=other_day, sub=1),
            ]
            for part in parts:
                self._add(part)
            self._expect_match("splits", SPLIT, parts, [item])
            return True
        return False

    def _merge(self, batch: list[LedgerItem]) -> bool:
        total = sum(item.amount for item in batch)
        allowed = max(self.exact.amount.allowed(total), self.tolerant.amount.allowed(total))
        # The merged entry must be no candidate of a one-to-one rule with any one member.
        if not _fits(total) or any(abs(total - item.amount) <= allowed for item in batch):
            return False
        first = batch[0]
        draft = _Draft(
            first.account,
            total,
            max(item.date for item in batch),
            first.reference,
            f"Batch of {len(batch)} payments",
            (max(item.date for item in batch), 0, first.id, 0),
        )
        self._add(draft)
        self._expect_match("merges", MERGED, [draft], list(batch))
        return True

    def _duplicate(self, item: LedgerItem) -> bool:
        original = self._draft(item)
        copy = self._draft(item, sub=1)
        copy.copy_of = original
        if not self.exposure.free([copy]):
            return False
        self._add(original)
        self._add(copy)
        self.exposure.add([copy])
        self._expect_match("duplicates", EXACT, [original], [item])
        self._expect_break("duplicates", DUPLICATE, [copy], [])
        return True

    def _unknown(self) -> bool:
        first, last = self.period
        for _ in range(_ATTEMPTS):
            account = self.rng.choice(self.accounts)
            day = first + timedelta(days=self.rng.randint(0, (last - first).days))
            amount = self._sign() * self.rng.randint(100, 100_000)
            reference = f"BANK-{self.rng.randrange(16**8):08X}"
            if (account, fold(reference)) in self.references:
                continue
            draft = _Draft(
                account,
                amount,
                day,
                reference,
                self.rng.choice(_UNKNOWN),
                (day, 1, (self.rng.randrange(2**32),), 0),
            )
            if self.exposure.free([draft]):
                self.references.add((account, fold(reference)))
                self._add(draft)
                self.exposure.add([draft])
                self._expect_break("unknown_entries", MISSING_IN_LEDGER, [draft], [])
                return True
        return False

    # -- helpers -------------------------------------------------------------------------------

    def _shifted(self, day: date, days: int) -> date | None:
        """`day` moved `days` later or earlier (drawn), but never past the statement's last
        day: the statement closes on the day of its last movement, and states its closing
        balance as of then (`None`: no such day)."""
        sign = self._sign()
        if sign > 0 and (self.last_day - day).days < days:
            sign = -1
        return _shifted(day, sign * days)

    def _sign(self) -> int:
        return self.rng.choice((-1, 1))

    def _draft(
        self, item: LedgerItem, *, amount: int | None = None, day: date | None = None, sub=0
    ) -> _Draft:
        """The entry a bank writes for `item` (with its amount or day replaced if given)."""
        day = item.date if day is None else day
        return _Draft(
            item.account,
            item.amount if amount is None else amount,
            day,
            item.reference,
            item.description,
            # Mirrors stand in their statement by day, then in the order of their ledger
            # items' ids: items the last rule cannot tell apart then pair up in id order.
            (day, 0, item.id, sub),
        )

    def _mirror(self, item: LedgerItem, **changes) -> _Draft:
        draft = self._draft(item, **changes)
        self._add(draft)
        return draft

    def _add(self, draft: _Draft) -> None:
        self.drafts.append(draft)

    def _expect_match(
        self, kind: str, rule: str, drafts: list[_Draft], items: list[LedgerItem]
    ) -> None:
        self.matches.append((kind, rule, drafts, items))

    def _expect_break(
        self, kind: str, reason: str, drafts: list[_Draft], items: list[LedgerItem]
    ) -> None:
        self.breaks.append((kind, reason, drafts, items))

    # -- the file ------------------------------------------------------------------------------

    def written(
        self,
        account_ids: Mapping[str, str],
        opening_balances: Mapping[str, int],
        currency: str,
        precision: int,
        message_id: str,
        rules: tuple[Rule, ...],
    ) -> GeneratedStatement:
        days = [d.day for d in self.drafts] + list(self.period)
        first, last = min(days), max(days)
        by_account: dict[str, list[_Draft]] = {key: [] for key in account_ids}
        for draft in self.drafts:
            by_account[draft.account].append(draft)
        entries: list[GeneratedEntry] = []
        statements: list[CamtStatement] = []
        balances: list[ExpectedBalance] = []
        for n, (key, drafts) in enumerate(by_account.items(), start=1):
            drafts.sort(key=lambda d: d.order)
            written = []
            for draft in drafts:
                draft.position = len(entries) + 1
                original = draft.copy_of or draft
                # A duplicate is the same booking reported again: its servicer reference too.
                servicer = f"{message_id}-{original.position or draft.position:06d}"
                entries.append(
                    GeneratedEntry(
                        draft.position,
                        key,
                        account_ids[key],
                        draft.amount,
                        draft.day,
                        draft.day,
                        draft.reference,
                        servicer,
                        draft.description,
                    )
                )
                written.append(
                    CamtEntry(
                        draft.amount,
                        draft.day,
                        draft.day,
                        draft.reference,
                        servicer,
                        draft.description,
                    )
                )
            opening = opening_balances.get(key, 0)
            statement = CamtStatement(
                account_ids[key], f"{message_id}-{n}", currency, opening, first, last, written
            )
            statements.append(statement)
            balances.append(ExpectedBalance(key, opening, statement.closing_balance, first, last))
        document = write_camt053(
            statements,
            message_id=message_id,
            created=datetime.combine(last, time(18), tzinfo=UTC),
            precision=precision,
        )
        return GeneratedStatement(
            document=document,
            message_id=message_id,
            entries=tuple(entries),
            balances=tuple(balances),
            matches=tuple(self._match(*m) for m in self.matches),
            breaks=tuple(self._break(*b) for b in self.breaks),
            rules=rules,
            injected=dict(self.injected),
        )

    @staticmethod
    def _match(
        kind: str, rule: str, drafts: list[_Draft], items: list[LedgerItem]
    ) -> ExpectedMatch:
        # A group's date is its latest member's (matching's specification).
        statement_day = max(d.day for d in drafts)
        ledger_day = max(i.date for i in items)
        return ExpectedMatch(
            kind,
            rule,
            drafts[0].account,
            tuple(sorted(d.position for d in drafts)),
            tuple(sorted(i.id for i in items)),
            sum(d.amount for d in drafts) - sum(i.amount for i in items),
            abs((statement_day - ledger_day).days),
        )

    @staticmethod
    def _break(
        kind: str, reason: str, drafts: list[_Draft], items: list[LedgerItem]
    ) -> ExpectedBreak:
        account = (drafts or items)[0].account
        difference = None
        if reason == AMOUNT_MISMATCH:
            difference = drafts[0].amount - items[0].amount
        return ExpectedBreak(
            kind,
            reason,
            account,
            tuple(d.position for d in drafts),
            tuple(i.id for i in items),
            difference,
        )


def _fits(amount: int) -> bool:
    # INT64_MIN itself cannot be written (its magnitude is beyond int64).
    return INT64_MIN < amount <= INT64_MAX


def _shifted(day: date, days: int) -> date | None:
    try:
        return day + timedelta(days=days)
    except OverflowError:
        return None
