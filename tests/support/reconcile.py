"""Items, rules and sources for the reconciliation tests: short builders for hand-written
cases, and hypothesis strategies for generated ones.

Builders take a number and an amount and default the rest: statement item `n` has the id
`(1, n)` and ledger item `n` the id `(7, n, 0)`, both on `ACCOUNT` dated `DAY` (plus `days`)::

    statement_item(1, 10_000, reference="INV-1")
    ledger_item(1, 10_000, reference="inv-1", days=2)
    rule(reference=1.0, window_days=3)

The strategies draw from small pools (two accounts, a handful of amounts, five days, a few
references and descriptions that fold alike or nearly) so that candidates collide, costs tie
up to the ids, groups form and identical statement entries recur.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date, timedelta

from hypothesis import strategies as st

from ledger_engine.reconcile.matching import LedgerItem, StatementItem
from ledger_engine.reconcile.rules import (
    GROUP_FIELDS,
    MANY_TO_ONE,
    ONE_TO_MANY,
    ONE_TO_ONE,
    AmountCriterion,
    Rule,
)
from ledger_engine.reconcile.sources import CsvLayout, Source

DAY = date(2026, 11, 2)
ACCOUNT = "acct-000001"


# The columns of the tests' plain CSV statements: "Date,Amount,Ref".
CSV_COLUMNS = {"booking_date": "Date", "amount": "Amount", "reference": "Ref"}

# A reconciliation declaration as a person writes it: one CSV source, "Main bank", for the
# bank's account alice, matched by reference, written off through the adjustments stream.
MAIN_BANK_DECLARATION = """
version = 1

[sources."Main bank"]
format = "csv"
table = "accounts"
currency = "EUR"
precision = 2
account = "alice"
[sources."Main bank".csv.columns]
booking_date = "Date"
amount = "Amount"
reference = "Ref"

[[sources."Main bank".rules]]
name = "same reference"
reference = { similarity = 1.0 }
date = { window_days = 1 }

[sources."Main bank".write_off]
stream = "adjustments"
"""


def csv_source(
    name: str = "bank", account: str = "alice", *, columns: dict | None = None, **fields
) -> Source:
    """A source of CSV statements (`columns`: field -> header, default `CSV_COLUMNS`) about
    one row of the bank's `accounts`, in EUR at 2 decimals; `fields` sets any other field of
    `Source` (`rules`, `write_off`)."""
    layout = CsvLayout(dict(CSV_COLUMNS if columns is None else columns))
    return Source(name, "csv", "accounts", "EUR", 2, account=account, csv=layout, **fields)


def statement_item(
    n: int,
    amount: int,
    *,
    account: str = ACCOUNT,
    days: int = 0,
    reference: str | None = None,
    description: str | None = None,
    id: tuple[int, ...] | None = None,
) -> StatementItem:
    """Statement item `n` (id `(1, n)` unless given), dated `DAY` + `days`."""
    return StatementItem(
        id=id or (1, n),
        account=account,
        amount=amount,
        date=DAY + timedelta(days=days),
        reference=reference,
        description=description,
    )


def ledger_item(
    n: int,
    amount: int,
    *,
    account: str = ACCOUNT,
    days: int = 0,
    reference: str | None = None,
    description: str | None = None,
    id: tuple[int, ...] | None = None,
) -> LedgerItem:
    """Ledger item `n` (id `(7, n, 0)` unless given), dated `DAY` + `days`."""
    return LedgerItem(
        id=id or (7, n, 0),
        account=account,
        amount=amount,
        date=DAY + timedelta(days=days),
        reference=reference,
        description=description,
        request_id=f"req-{n}",
    )


def rule(
    name: str = "rule",
    priority: int = 0,
    *,
    strategy: str = ONE_TO_ONE,
    group_by: str | None = None,
    tolerance: int = 0,
    relative: float = 0.0,
    window_days: int | None = None,
    reference: float | None = None,
    description: float | None = None,
) -> Rule:
    """A rule with the criteria given (the amount always compared, tolerance 0 by default)."""
    return Rule(
        name=name,
        priority=priority,
        strategy=strategy,
        group_by=group_by,
        amount=AmountCriterion(tolerance, relative),
        window_days=window_days,
        reference_similarity=reference,
        description_similarity=description,
    )


# Pools small enough for collisions. The texts fold alike in pairs ("INV-1" and " inv-1"),
# differ by an edit or two ("INV-12", "card fees"), and bring letters whose lower case is
# not ASCII (capital sigma at a word's end, sharp s, dotted capital I) and white space other
# than the plain space (no-break space, tab, ideographic space), where a matcher that folds
# otherwise than the specification would part from the oracle.
REFERENCES = ("INV-1", " inv-1", "INV-12", "INV-2", "ΟΔΟΣ 7", "οδοσ 7", "", "İ-3")
DESCRIPTIONS = (
    "Card fee",
    "card\u00a0 FEE",
    "card fees",
    "Payout\tbatch",
    "payout batch 2",
    "Straße 1",
    "STRASSE 1",
    "\u3000",
)
ACCOUNTS = ("acct-1", "acct-2")
AMOUNTS = (-300, -100, 0, 100, 101, 150, 200, 250, 300, 10_000, 10_050)


@st.composite
def _fields(draw: st.DrawFn) -> dict:
    return {
        "account": draw(st.sampled_from(ACCOUNTS)),
        "amount": draw(st.sampled_from(AMOUNTS) | st.integers(-400, 400)),
        "date": DAY + timedelta(days=draw(st.integers(0, 4))),
        "reference": draw(st.none() | st.sampled_from(REFERENCES)),
        "description": draw(st.none() | st.sampled_from(DESCRIPTIONS)),
    }


@st.composite
def statement_items(draw: st.DrawFn, max_size: int = 8) -> list[StatementItem]:
    """Statement items with distinct ids (not in list order), some of them identical to an
    earlier one but for the id (duplicates)."""
    fields = draw(st.lists(_fields(), max_size=max_size))
    copies = draw(st.lists(st.sampled_from(fields), max_size=3)) if fields else []
    ids = draw(_ids(len(fields) + len(copies), width=2))
    return [StatementItem(id=i, **f) for i, f in zip(ids, [*fields, *copies], strict=True)]


@st.composite
def ledger_items(draw: st.DrawFn, max_size: int = 8) -> list[LedgerItem]:
    """Ledger items with distinct ids (not in list order)."""
    fields = draw(st.lists(_fields(), max_size=max_size))
    ids = draw(_ids(len(fields), width=3))
    return [
        LedgerItem(id=i, request_id=f"req-{n}", **f)
        for n, (i, f) in enumerate(zip(ids, fields, strict=True))
    ]


def _ids(count: int, width: int) -> st.SearchStrategy[list[tuple[int, ...]]]:
    return st.lists(
        st.tuples(*[st.integers(0, 3)] * (width - 1), st.integers(0, 30)),
        min_size=count,
        max_size=count,
        unique=True,
    )


@st.composite
def rules(draw: st.DrawFn, max_size: int = 3) -> list[Rule]:
    """One to `max_size` rules, priorities 0, 1, ... (given in a shuffled order)."""
    count = draw(st.integers(1, max_size))
    drawn = []
    for priority in range(count):
        strategy = draw(st.sampled_from((ONE_TO_ONE, ONE_TO_ONE, ONE_TO_MANY, MANY_TO_ONE)))
        drawn.append(
            Rule(
                name=f"rule {priority}",
                priority=priority,
                strategy=strategy,
                group_by=None if strategy == ONE_TO_ONE else draw(st.sampled_from(GROUP_FIELDS)),
                amount=AmountCriterion(
                    draw(st.sampled_from((0, 0, 1, 50))),
                    draw(st.sampled_from((0.0, 0.0, 0.01, 0.5))),
                ),
                window_days=draw(st.sampled_from((None, 0, 1, 2))),
                reference_similarity=draw(st.sampled_from((None, None, 1.0, 0.8, 0.5))),
                description_similarity=draw(st.sampled_from((None, None, 1.0, 0.75, 0.4))),
            )
        )
    return draw(st.permutations(drawn))


@st.composite
def side_by_side(
    draw: st.DrawFn, max_parts: int = 5
) -> tuple[list[StatementItem], list[LedgerItem]]:
    """Several drawn (statement, ledger) inputs as one: part k's accounts prefixed `k/` and
    its ids `(k, *id)`. Items of different accounts never meet (no candidate, no duplicate,
    no amount mismatch), so one matching run decides every part as if alone, and the cost of
    a Spark run is shared by several inputs."""
    statement: list[StatementItem] = []
    ledger: list[LedgerItem] = []
    for k in range(draw(st.integers(1, max_parts))):
        statement += [
            replace(s, id=(k, *s.id), account=f"{k}/{s.account}") for s in draw(statement_items())
        ]
        ledger += [
            replace(item, id=(k, *item.id), account=f"{k}/{item.account}")
            for item in draw(ledger_items())
        ]
    return statement, ledger
