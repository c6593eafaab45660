"""Matching rules: how a source's statement entries are paired with the ledger's entries.

Each source lists its rules in the sources' declaration file, in priority order (exact first,
fuzzier later)::

    [[sources."Main bank".rules]]
    name = "same reference and amount"
    reference = { similarity = 1.0 }        # 1.0: equal (and present on both sides)
    amount = { tolerance = 0 }              # minor units
    date = { window_days = 2 }

    [[sources."Main bank".rules]]
    name = "card fees, a little off"
    description = { similarity = 0.8 }      # 1 - Levenshtein distance / longer length
    amount = { tolerance = 50, relative = 0.001 }   # within max(50, 0.1% of the amount)
    date = { window_days = 3 }

    [[sources."Main bank".rules]]
    name = "batch payout"
    strategy = "one_to_many"                # one statement entry settles several ledger ones
    group_by = "reference"                  # the ledger entries grouped by their reference
    amount = { tolerance = 0 }
    date = { window_days = 5 }

A criterion left out is not compared; `amount` is always compared (tolerance 0 by default).
`strategy` is `one_to_one` (the default), `one_to_many` (one statement entry, several ledger
entries: a batch payout) or `many_to_one` (several statement entries, one ledger entry), and a
grouped strategy names its grouping field (`reference`, `description` or `date`). What a rule
means exactly, and how ties are broken, is `ledger_engine.reconcile.matching`'s to say.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ledger_engine.errors import SourcesError

ONE_TO_ONE, ONE_TO_MANY, MANY_TO_ONE = "one_to_one", "one_to_many", "many_to_one"
STRATEGIES = (ONE_TO_ONE, ONE_TO_MANY, MANY_TO_ONE)
GROUP_FIELDS = ("reference", "description", "date")
_RULE_KEYS = {"name", "strategy", "group_by", "amount", "date", "reference", "description"}


@dataclass(frozen=True)
class AmountCriterion:
    """Amounts agree when they differ by at most max(`tolerance`, `relative` x |statement
    amount|), in minor units (rounded down)."""

    tolerance: int = 0
    relative: float = 0.0

    def allowed(self, statement_amount: int) -> int:
        """The largest difference allowed against `statement_amount`."""
        return max(self.tolerance, math.floor(self.relative * abs(statement_amount)))


@dataclass(frozen=True)
class Rule:
    """One matching rule of a source, at `priority` (0 first) in the source's list."""

    name: str
    priority: int
    strategy: str = ONE_TO_ONE
    group_by: str | None = None
    amount: AmountCriterion = AmountCriterion()
    window_days: int | None = None  # None: dates are not compared
    reference_similarity: float | None = None  # None: references are not compared
    description_similarity: float | None = None  # None: descriptions are not compared


def parse_rules(where: str, declared: Any) -> tuple[Rule, ...]:
    """The rules of a source (`where` names it in messages), in priority order."""
    if not isinstance(declared, list) or not all(isinstance(r, Mapping) for r in declared):
        raise SourcesError(f"{where}: rules must be a list of tables ([[...rules]])")
    rules = tuple(_rule(f"{where} rule {i + 1}", i, body) for i, body in enumerate(declared))
    names = [r.name for r in rules]
    if len(set(names)) != len(names):
        raise SourcesError(f"{where}: two rules share a name")
    return rules


def _rule(where: str, priority: int, body: Mapping[str, Any]) -> Rule:
    unknown = sorted(set(body) - _RULE_KEYS)
    if unknown:
        raise SourcesError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}")
    name = body.get("name")
    if not isinstance(name, str) or not name.strip():
        raise SourcesError(f"{where}: name must be non-empty text")
    where = f"{where} ({name!r})"
    strategy = body.get("strategy", ONE_TO_ONE)
    if strategy not in STRATEGIES:
        raise SourcesError(f"{where}: strategy must be one of {', '.join(STRATEGIES)}")
    group_by = body.get("group_by")
    if (strategy == ONE_TO_ONE) != (group_by is None):
        raise SourcesError(f"{where}: group_by goes with a grouped strategy, and only there")
    if group_by is not None and group_by not in GROUP_FIELDS:
        raise SourcesError(f"{where}: group_by must be one of {', '.join(GROUP_FIELDS)}")
    return Rule(
        name=name,
        priority=priority,
        strategy=strategy,
        group_by=group_by,
        amount=_amount(where, body.get("amount", {})),
        window_days=_window(where, body.get("date")),
        reference_similarity=_similarity(where, "reference", body.get("reference")),
        description_similarity=_similarity(where, "description", body.get("description")),
    )


def _amount(where: str, body: Any) -> AmountCriterion:
    if not isinstance(body, Mapping) or set(body) - {"tolerance", "relative"}:
        raise SourcesError(f"{where}: amount takes tolerance (minor units) and relative")
    tolerance, relative = body.get("tolerance", 0), body.get("relative", 0.0)
    if not isinstance(tolerance, int) or isinstance(tolerance, bool) or tolerance < 0:
        raise SourcesError(f"{where}: amount tolerance must be a whole number >= 0")
    if not isinstance(relative, int | float) or isinstance(relative, bool):
        raise SourcesError(f"{where}: amount relative must be a number from 0 to 1")
    if not 0 <= relative <= 1:
        raise SourcesError(f"{where}: amount relative must be a number from 0 to 1")
    return AmountCriterion(tolerance, float(relative))


def _window(where: str, body: Any) -> int | None:
    if body is None:
        return None
    if not isinstance(body, Mapping) or set(body) != {"window_days"}:
        raise SourcesError(f"{where}: date takes window_days")
    days = body["window_days"]
    if not isinstance(days, int) or isinstance(days, bool) or not 0 <= days <= 366:
        raise SourcesError(f"{where}: window_days must be a whole number from 0 to 366")
    return days


def _similarity(where: str, field: str, body: Any) -> float | None:
    if body is None:
        return None
    if not isinstance(body, Mapping) or set(body) != {"similarity"}:
        raise SourcesError(f"{where}: {field} takes similarity")
    value = body["similarity"]
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0 < value <= 1:
        raise SourcesError(f"{where}: {field} similarity must be a number above 0, at most 1")
    return float(value)


# -- the default rules ------------------------------------------------------------------------
# The rules the bank's declaration (`expectations/bank/reconciliation.toml`) lists, and the ones
# the statement generator's truth holds for (`reconcile.generator`).

DEFAULT_TOLERANCE = 50  # minor units
DEFAULT_WINDOW_DAYS = 3

EXACT = "same reference, amount and day"
TOLERANT = "same reference, near amount and date"
SPLIT = "split payment"
MERGED = "merged payment"
NO_REFERENCE = "same amount and day, no reference"


def default_rules(
    amount_tolerance: int = DEFAULT_TOLERANCE, window_days: int = DEFAULT_WINDOW_DAYS
) -> tuple[Rule, ...]:
    """The rules the generator's truth holds for, in priority order: exact reference (and
    amount and day) first, then the same reference with the amount within
    `amount_tolerance` minor units and the date within `window_days`, then split and merged
    payments grouped by reference, and last, for movements that carry no reference, the same
    amount on the same day."""
    assert amount_tolerance >= 0 and window_days >= 0
    tolerant = AmountCriterion(amount_tolerance)
    return (
        Rule(EXACT, 0, window_days=0, reference_similarity=1.0),
        Rule(TOLERANT, 1, amount=tolerant, window_days=window_days, reference_similarity=1.0),
        Rule(
            SPLIT,
            2,
            strategy=MANY_TO_ONE,
            group_by="reference",
            window_days=window_days,
            reference_similarity=1.0,
        ),
        Rule(
            MERGED,
            3,
            strategy=ONE_TO_MANY,
            group_by="reference",
            window_days=window_days,
            reference_similarity=1.0,
        ),
        # Exact amount and day, and nothing else: the generator's account of which items this
        # rule may pair (`_Exposure`) depends on it.
        Rule(NO_REFERENCE, 4, window_days=0),
    )
