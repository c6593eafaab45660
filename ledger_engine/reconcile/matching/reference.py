"""The reference matcher: a plain Python reading of the specification in `matching`, line by
line, the oracle the Spark matcher is tested against. Clarity over speed: every rule looks at
every pair of its sides' items, and the greedy choice sorts all of a rule's candidates."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date

from ledger_engine.reconcile.matching import (
    AMOUNT_MISMATCH,
    DUPLICATE,
    MISSING_IN_LEDGER,
    MISSING_IN_STATEMENT,
    Break,
    ItemId,
    LedgerItem,
    Match,
    MatchingOutcome,
    StatementItem,
)
from ledger_engine.reconcile.matching.order import break_order, match_order
from ledger_engine.reconcile.matching.similarity import fold, similarity
from ledger_engine.reconcile.rules import MANY_TO_ONE, ONE_TO_MANY, Rule

Cost = tuple[int, int, float, float, ItemId, ItemId]


@dataclass(frozen=True)
class Node:
    """What a rule matches on one side: one item, or a group standing for its members."""

    ids: tuple[ItemId, ...]  # the members, in id order (one for a single item)
    account: str
    amount: int
    date: date
    reference: str | None
    description: str | None

    @property
    def id(self) -> ItemId:
        """The node's id in costs: a group's is its smallest member id."""
        return self.ids[0]


@dataclass(frozen=True)
class Candidate:
    """A pair that meets a rule's criteria, with its cost."""

    cost: Cost
    statement: Node
    ledger: Node


def match(
    statement: Sequence[StatementItem], ledger: Sequence[LedgerItem], rules: Sequence[Rule]
) -> MatchingOutcome:
    """Match `statement` items with `ledger` items by `rules` (run in priority order), and
    name a break for every item left: the specification's outcome."""
    matched_statement: set[ItemId] = set()
    matched_ledger: set[ItemId] = set()
    matches: list[tuple[int, Match]] = []
    for rule in sorted(rules, key=lambda r: r.priority):
        left_statement = [_node(s) for s in statement if s.id not in matched_statement]
        left_ledger = [_node(item) for item in ledger if item.id not in matched_ledger]
        if rule.strategy == MANY_TO_ONE:
            left_statement = _groups(left_statement, rule.group_by)
        if rule.strategy == ONE_TO_MANY:
            left_ledger = _groups(left_ledger, rule.group_by)
        candidates = [
            Candidate(_cost(rule, s, item), s, item)
            for s in left_statement
            for item in left_ledger
            if _meets(rule, s, item)
        ]
        for kept in _greedy(candidates):
            matched_statement.update(kept.statement.ids)
            matched_ledger.update(kept.ledger.ids)
            matches.append((rule.priority, _match(rule, kept)))
    matches.sort(key=lambda m: match_order(*m))
    breaks = _breaks(statement, ledger, matched_statement, matched_ledger)
    return MatchingOutcome(tuple(m for _, m in matches), tuple(breaks))


def _node(item: StatementItem | LedgerItem) -> Node:
    return Node((item.id,), item.account, item.amount, item.date, item.reference, item.description)


def _groups(nodes: Iterable[Node], field: str | None) -> list[Node]:
    """The groups of two or more `nodes` of one account sharing `field`'s value (folded if a
    text); a node lacking the field is in no group. Single nodes are not candidates of a
    grouped rule on this side."""
    assert field is not None
    members: dict[tuple[str, object], list[Node]] = {}
    for node in nodes:
        value = getattr(node, field)
        if value is None:
            continue
        key = value if field == "date" else fold(value)
        members.setdefault((node.account, key), []).append(node)
    groups = []
    for (account, key), group in members.items():
        if len(group) < 2:
            continue
        latest = max(n.date for n in group)
        groups.append(
            Node(
                ids=tuple(sorted(n.ids[0] for n in group)),
                account=account,
                amount=sum(n.amount for n in group),
                date=latest,
                # The shared value stands for the group's field (already folded: folding it
                # again gives it back), the other texts are missing.
                reference=key if field == "reference" else None,
                description=key if field == "description" else None,
            )
        )
    return groups


def _meets(rule: Rule, s: Node, item: Node) -> bool:
    """Whether the pair is a candidate of `rule`."""
    if s.account != item.account:
        return False
    if abs(s.amount - item.amount) > rule.amount.allowed(s.amount):
        return False
    if rule.window_days is not None and abs((s.date - item.date).days) > rule.window_days:
        return False
    for threshold, mine, theirs in (
        (rule.reference_similarity, s.reference, item.reference),
        (rule.description_similarity, s.description, item.description),
    ):
        if threshold is None:
            continue
        value = similarity(mine, theirs)
        if value is None or value < threshold:
            return False
    return True


def _cost(rule: Rule | None, s: Node, item: Node) -> Cost:
    """The pair's cost; `rule` None compares no similarity (amount mismatches)."""

    def negated(threshold: float | None, mine: str | None, theirs: str | None) -> float:
        if rule is None or threshold is None:
            return 0.0  # not compared
        value = similarity(mine, theirs)
        assert value is not None  # a candidate meets the criterion
        return -value

    return (
        abs(s.amount - item.amount),
        abs((s.date - item.date).days),
        negated(rule and rule.reference_similarity, s.reference, item.reference),
        negated(rule and rule.description_similarity, s.description, item.description),
        s.id,
        item.id,
    )


def _greedy(candidates: Iterable[Candidate]) -> list[Candidate]:
    """Candidates in increasing cost, each kept if none of its items was kept already."""
    taken: set[tuple[str, ItemId]] = set()  # (side, id): ids of the two sides kept apart
    kept = []
    for candidate in sorted(candidates, key=lambda c: c.cost):
        items = {("s", i) for i in candidate.statement.ids} | {
            ("l", i) for i in candidate.ledger.ids
        }
        if items & taken:
            continue
        taken |= items
        kept.append(candidate)
    return kept


def _match(rule: Rule, kept: Candidate) -> Match:
    s, item = kept.statement, kept.ledger
    return Match(
        rule=rule.name,
        account=s.account,
        statement_ids=s.ids,
        ledger_ids=item.ids,
        amount_difference=s.amount - item.amount,
        date_difference_days=abs((s.date - item.date).days),
    )


def _identity(item: StatementItem) -> tuple[object, ...]:
    return (item.account, item.amount, item.date, item.reference, item.description)


def _breaks(
    statement: Sequence[StatementItem],
    ledger: Sequence[LedgerItem],
    matched_statement: set[ItemId],
    matched_ledger: set[ItemId],
) -> list[Break]:
    """The breaks of what the rules left, in the specification's order of reasons."""
    breaks: list[Break] = []
    # 1. Duplicates, in id order so that whether an earlier item is itself a duplicate is
    # known when a later one asks: an earlier identical item that is matched, or unmatched
    # and not a duplicate (then it is kept as a break of another reason below), makes an
    # unmatched item a duplicate.
    duplicates: set[ItemId] = set()
    for item in sorted(statement, key=lambda s: s.id):
        if item.id in matched_statement:
            continue
        if any(
            _identity(earlier) == _identity(item)
            and (earlier.id in matched_statement or earlier.id not in duplicates)
            for earlier in statement
            if earlier.id < item.id
        ):
            duplicates.add(item.id)
            breaks.append(Break(DUPLICATE, item.account, (item.id,), ()))
    left_statement = [
        _node(s) for s in statement if s.id not in matched_statement and s.id not in duplicates
    ]
    left_ledger = [_node(item) for item in ledger if item.id not in matched_ledger]
    # 2. Amount mismatches: equal folded references, different amounts, chosen greedily.
    pairs = [
        Candidate(_cost(None, s, item), s, item)
        for s in left_statement
        for item in left_ledger
        if s.account == item.account
        and s.reference is not None
        and item.reference is not None
        and fold(s.reference) == fold(item.reference)
        and s.amount != item.amount
    ]
    paired_statement: set[ItemId] = set()
    paired_ledger: set[ItemId] = set()
    for kept in _greedy(pairs):
        s, item = kept.statement, kept.ledger
        paired_statement.add(s.id)
        paired_ledger.add(item.id)
        breaks.append(
            Break(AMOUNT_MISMATCH, s.account, (s.id,), (item.id,), s.amount - item.amount)
        )
    # 3. and 4. Whatever is left, on either side.
    breaks.extend(
        Break(MISSING_IN_LEDGER, s.account, (s.id,), ())
        for s in left_statement
        if s.id not in paired_statement
    )
    breaks.extend(
        Break(MISSING_IN_STATEMENT, item.account, (), (item.id,))
        for item in left_ledger
        if item.id not in paired_ledger
    )
    return sorted(breaks, key=break_order)
