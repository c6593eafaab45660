"""The camt.053 writer reads back as written, and the statement generator's truth is what the
reference matcher concludes over the generated statement: every injected difference found with
its reason, every mirrored movement matched, no other match; the same seed, the same file."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import UTC, date, datetime, time, timedelta, timezone

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ledger_engine.reconcile.entries import StatementBalance, StatementEntry
from ledger_engine.reconcile.formats.camt053 import parse_camt053
from ledger_engine.reconcile.formats.camt053_writer import (
    CamtEntry,
    CamtStatement,
    is_iban,
    text_problem,
    write_camt053,
)
from ledger_engine.reconcile.generated_statement import (
    KINDS,
    MIRRORED,
    DifferencePlan,
    GeneratedStatement,
    statement_items,
)
from ledger_engine.reconcile.generator import statement_with_differences
from ledger_engine.reconcile.matching import (
    AMOUNT_MISMATCH,
    DUPLICATE,
    MISSING_IN_LEDGER,
    MISSING_IN_STATEMENT,
    LedgerItem,
    MatchingOutcome,
)
from ledger_engine.reconcile.matching.reference import match
from ledger_engine.reconcile.rules import EXACT, MERGED, NO_REFERENCE, SPLIT, TOLERANT
from ledger_engine.reconcile.sources import Source

IBAN = "DE89370400440532013000"
OTHER_IBAN = "GB29NWBK60161331926819"
ACCOUNT_IDS = {"acct-1": IBAN, "acct-2": "acct-2 at the provider"}
SOURCE = Source(
    "Main bank", "camt053", "accounts", "EUR", 2, accounts={v: k for k, v in ACCOUNT_IDS.items()}
)
DAY = date(2026, 11, 2)
FILE = 41  # the file id the generated statement is loaded as
CREATED = datetime(2026, 11, 2, 18, tzinfo=UTC)


def without_raw(entries: tuple[StatementEntry, ...]) -> list[StatementEntry]:
    return [replace(e, raw=b"") for e in entries]


# -- the writer --------------------------------------------------------------------------------

# Texts that need escaping, white space inside, and characters beyond ASCII (and the BMP).
_LETTERS = st.sampled_from([*"aZ9 -/&<>\"'\t\n\r", "é", "€", "ß", "Σ", "\u3000", "😀", "]]>"])
TEXTS = (
    st.lists(_LETTERS | st.characters(exclude_categories=("Cs", "Cc")), min_size=1, max_size=12)
    .map(lambda letters: "".join(letters).strip())
    .filter(lambda t: text_problem(t) is None and t != "NOTPROVIDED")
)
OFFSETS = st.sampled_from(
    [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=3, minutes=15))]
)


@st.composite
def camt_entries(draw: st.DrawFn, precision: int) -> CamtEntry:
    bound = 2**63 - 1
    return CamtEntry(
        amount=draw(st.integers(-bound, bound) | st.integers(-(10**6), 10**6)),
        booking_date=draw(st.dates()),
        value_date=draw(st.none() | st.dates()),
        reference=draw(st.none() | TEXTS),
        servicer_reference=draw(st.none() | TEXTS),
        description=draw(st.none() | TEXTS),
    )


@st.composite
def documents(draw: st.DrawFn) -> tuple[int, list[CamtStatement]]:
    precision = draw(st.integers(0, 4))
    account_ids = draw(
        st.lists(
            st.sampled_from([IBAN, OTHER_IBAN, "acct-2 at the provider", "12345"]),
            min_size=1,
            max_size=3,
            unique=True,
        )
    )
    statements = []
    for n, account_id in enumerate(account_ids):
        entries = draw(st.lists(camt_entries(precision), max_size=5))
        closing_date = draw(
            st.dates(max_value=date(9999, 12, 30)) | st.datetimes(timezones=OFFSETS)
        )
        statements.append(
            CamtStatement(
                account_id=account_id,
                statement_id=f"STMT-{n}",
                currency="EUR",
                opening=draw(st.integers(-(10**12), 10**12)),
                opening_date=draw(st.dates()),
                closing_date=closing_date,
                entries=entries,
                closing=draw(st.none() | st.integers(-(10**12), 10**12)),
            )
        )
    return precision, statements


@settings(max_examples=80, deadline=None)
@given(documents(), TEXTS)
def test_a_written_statement_reads_back_as_written(document, message_id):
    precision, statements = document
    # A closing balance summed beyond int64 is refused (tested below), not written.
    assume(all(-(2**63) < s.closing_balance < 2**63 for s in statements))
    keys = {s.account_id: f"key-{n}" for n, s in enumerate(statements)}
    source = Source("Main bank", "camt053", "accounts", "EUR", precision, accounts=keys)
    raw = write_camt053(statements, message_id=message_id, created=CREATED, precision=precision)

    parsed = parse_camt053(raw, source)

    assert parsed.rejections == ()
    assert parsed.statement_id == message_id
    written = [(s, e) for s in statements for e in s.entries]
    assert without_raw(parsed.entries) == [
        StatementEntry(
            position=n,
            account=keys[s.account_id],
            amount=e.amount,
            booking_date=e.booking_date,
            value_date=e.value_date,
            reference=e.reference,
            servicer_reference=e.servicer_reference,
            description=e.description,
            raw=b"",
        )
        for n, (s, e) in enumerate(written, start=1)
    ]
    assert list(parsed.balances) == [
        StatementBalance(keys[s.account_id], s.opening, s.closing_balance, s.closing_date, n)
        for n, s in enumerate(statements, start=1)
    ]
    assert [b.as_of for b in parsed.balances] == [_as_of(s.closing_date) for s in statements]
    assert raw.decode("utf-8").count("<Ntry>") == len(written)


def _as_of(when: date | datetime) -> datetime:
    if isinstance(when, datetime):
        return when
    return datetime.combine(when + timedelta(days=1), time(0), tzinfo=UTC)


def test_an_iban_is_written_as_one_and_any_other_id_as_othr():
    raw = write_camt053(
        [
            CamtStatement(IBAN, "S-1", "EUR", 0, DAY, DAY),
            # An IBAN's form with wrong check digits is some other id.
            CamtStatement("DE00370400440532013000", "S-2", "EUR", 0, DAY, DAY),
            CamtStatement(OTHER_IBAN, "S-3", "EUR", 0, DAY, DAY, iban=False),
        ],
        message_id="M",
        created=CREATED,
        precision=2,
    ).decode()
    assert f"<IBAN>{IBAN}</IBAN>" in raw
    assert "<Othr><Id>DE00370400440532013000</Id></Othr>" in raw
    assert f"<Othr><Id>{OTHER_IBAN}</Id></Othr>" in raw
    assert is_iban(IBAN) and is_iban(OTHER_IBAN) and not is_iban("acct-1")


def test_an_entry_is_written_in_the_schemas_order_with_a_closing_balance_summed():
    entry = CamtEntry(-1_234, DAY, DAY + timedelta(days=1), "E2E-1", "SVC-1", "rent <Nov> & co")
    raw = write_camt053(
        [CamtStatement(IBAN, "S-1", "EUR", 10_000, DAY, DAY, [entry])],
        message_id="M-1",
        created=CREATED,
        precision=2,
    ).decode()
    ntry = raw[raw.index("<Ntry>") : raw.index("</Ntry>")]
    names = ["<Amt", "<CdtDbtInd>DBIT", "<Sts><Cd>BOOK", "<BookgDt>", "<ValDt>", "<AcctSvcrRef>"]
    names += ["<BkTxCd>", "<EndToEndId>E2E-1", "<Ustrd>rent &lt;Nov&gt; &amp; co"]
    assert [ntry.index(n) for n in names] == sorted(ntry.index(n) for n in names)
    assert '<Amt Ccy="EUR">12.34</Amt>' in ntry
    assert '<Cd>CLBD</Cd></CdOrPrtry></Tp>\n        <Amt Ccy="EUR">87.66</Amt>' in raw


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        (CamtEntry(1, DAY, reference=" E2E"), "white space"),
        (CamtEntry(1, DAY, description="li\x0bne"), "XML cannot carry"),
        (CamtEntry(1, DAY, servicer_reference=""), "is empty"),
        (CamtEntry(1, DAY, reference="NOTPROVIDED"), "no reference"),
        (CamtEntry(-(2**63), DAY), "cannot be read back"),
        (CamtEntry(2**63, DAY), "beyond int64"),
        (CamtEntry(2**63 - 1, DAY), "closing balance"),  # opening 1 + this
    ],
)
def test_what_would_not_read_back_is_refused(entry, says):
    with pytest.raises(ValueError, match=says):
        write_camt053(
            [CamtStatement(IBAN, "S-1", "EUR", 1, DAY, DAY, [entry])],
            message_id="M",
            created=CREATED,
            precision=2,
        )


def test_a_closing_moment_without_offset_or_on_the_last_day_is_refused():
    for closing, says in ((datetime(2026, 11, 2, 18), "offset"), (date.max, "read back")):
        with pytest.raises(ValueError, match=says):
            write_camt053(
                [CamtStatement(IBAN, "S-1", "EUR", 0, DAY, closing)],
                message_id="M",
                created=CREATED,
                precision=2,
            )


# -- the generator -----------------------------------------------------------------------------

# What each kind of difference must come to, per injection: (match rules, break reasons).
CONCLUSIONS = {
    "missing_in_statement": ((), (MISSING_IN_STATEMENT,)),
    "unknown_entries": ((), (MISSING_IN_LEDGER,)),
    "drift_inside": ((TOLERANT,), ()),
    "drift_outside": ((), (AMOUNT_MISMATCH,)),
    "shift_inside": ((TOLERANT,), ()),
    "shift_outside": ((), (MISSING_IN_LEDGER, MISSING_IN_STATEMENT)),
    "splits": ((SPLIT,), ()),
    "merges": ((MERGED,), ()),
    "duplicates": ((EXACT,), (DUPLICATE,)),
}


def ledger_item(
    n: int,
    amount: int,
    *,
    account: str = "acct-1",
    days: int = 0,
    reference: str | None = None,
    description: str | None = None,
) -> LedgerItem:
    """Ledger item `n` (id `(7, n, 0)`), dated DAY + `days`."""
    return LedgerItem(
        (7, n, 0), account, amount, DAY + timedelta(days=days), reference, description, f"req-{n}"
    )


def reconciled(generated: GeneratedStatement, ledger: list[LedgerItem]) -> MatchingOutcome:
    """The reference matcher's outcome over the generated file as loaded (parsed back from its
    bytes) and the ledger items."""
    parsed = parse_camt053(generated.document, SOURCE)
    assert parsed.rejections == ()
    return match(statement_items(parsed.entries, FILE), ledger, generated.rules)


def only(kind: str, count: int = 1) -> DifferencePlan:
    return replace(DifferencePlan.none(), **{kind: count})


@st.composite
def ledgers(draw: st.DrawFn) -> list[LedgerItem]:
    """Ledger items on one or two accounts: most with a reference of their own, some sharing
    one (a batch), some with none; amounts and days from small pools so that items collide."""
    accounts = ["acct-1", "acct-2"][: draw(st.integers(1, 2))]
    items = []
    for n in range(draw(st.integers(0, 24))):
        shape = draw(st.sampled_from(("own", "own", "own", "batch", "none")))
        reference = {
            "own": f"INV-{n}",
            "batch": draw(st.sampled_from(("PAYOUT-1", "payout-1", "PAYOUT\u00a0-2"))),
            "none": None,
        }[shape]
        items.append(
            LedgerItem(
                (draw(st.integers(1, 3)), n, draw(st.integers(0, 1))),
                draw(st.sampled_from(accounts)),
                draw(st.sampled_from((-300, 150, 2_500, 10_000)) | st.integers(-50_000, 50_000)),
                DAY + timedelta(days=draw(st.integers(0, 4))),
                reference,
                draw(st.none() | st.sampled_from(("rent", "Card fee", "Straße 1"))),
                f"req-{n}",
            )
        )
    return draw(st.permutations(items))


PLANS = st.builds(DifferencePlan, **{kind: st.integers(0, 2) for kind in KINDS})
SEEDS = st.integers(0, 2**32)


def generate(ledger: list[LedgerItem], seed: int, plan: DifferencePlan) -> GeneratedStatement:
    return statement_with_differences(
        ledger, seed=seed, account_ids=ACCOUNT_IDS, differences=plan, period=(DAY, DAY)
    )


@settings(max_examples=40, deadline=None)
@given(ledgers(), SEEDS, PLANS)
def test_the_matcher_concludes_the_truth(ledger, seed, plan):
    generated = generate(ledger, seed, plan)
    outcome = reconciled(generated, ledger)
    truth = generated.truth(FILE)
    # No false match and no true one missed; every injected break found with its reason.
    assert set(outcome.matches) == set(truth.matches)
    assert set(outcome.breaks) == set(truth.breaks)
    assert outcome == truth  # in MatchingOutcome's order, too


@settings(max_examples=40, deadline=None)
@given(ledgers(), SEEDS, PLANS)
def test_the_truth_concludes_every_item_once_as_each_difference_must(ledger, seed, plan):
    generated = generate(ledger, seed, plan)
    statement_named = [p for m in generated.matches for p in m.positions]
    statement_named += [p for b in generated.breaks for p in b.positions]
    ledger_named = [i for m in generated.matches for i in m.ledger_ids]
    ledger_named += [i for b in generated.breaks for i in b.ledger_ids]
    assert sorted(statement_named) == [e.position for e in generated.entries]
    assert sorted(ledger_named) == sorted(item.id for item in ledger)
    for kind in KINDS:
        injected = generated.injected[kind]
        assert injected <= getattr(plan, kind)
        rules, reasons = CONCLUSIONS[kind]
        assert Counter(m.rule for m in generated.matches if m.kind == kind) == Counter(
            {rule: injected for rule in rules}
        )
        assert Counter(b.reason for b in generated.breaks if b.kind == kind) == Counter(
            {reason: injected for reason in reasons}
        )
    # Whatever no difference touched is matched as it is: by reference, or without one.
    for m in generated.matches:
        if m.kind == MIRRORED:
            assert m.rule in (EXACT, NO_REFERENCE)
            assert (m.amount_difference, m.date_difference_days) == (0, 0)
    assert {b.kind for b in generated.breaks} <= set(KINDS)


@settings(max_examples=25, deadline=None)
@given(ledgers(), SEEDS, PLANS)
def test_the_file_reads_back_as_generated_and_a_rerun_is_identical(ledger, seed, plan):
    generated = generate(ledger, seed, plan)
    parsed = parse_camt053(generated.document, SOURCE)
    assert statement_items(parsed.entries, FILE) == list(generated.statement_items(FILE))
    assert [e.servicer_reference for e in parsed.entries] == [
        e.servicer_reference for e in generated.entries
    ]
    assert [(b.account, b.opening, b.closing) for b in parsed.balances] == [
        (b.account, b.opening, b.closing) for b in generated.balances
    ]
    again = generate(list(reversed(ledger)), seed, plan)  # the items' order does not matter
    assert again == generated
    assert reconciled(again, ledger) == reconciled(generated, ledger)


@settings(max_examples=40, deadline=None)
@given(ledgers(), SEEDS, PLANS)
def test_no_entry_is_dated_after_the_last_movement_and_the_statement_closes_then(
    ledger, seed, plan
):
    """A shifted date goes earlier where later would pass the last movement: the statement
    states its closing balances as of its movements' last day, never a day after them."""
    generated = generate(ledger, seed, plan)
    last = max([DAY, *(item.date for item in ledger)])  # DAY: the period's end
    assert all(max(e.booking_date, e.value_date) <= last for e in generated.entries)
    assert {b.closing_date for b in generated.balances} <= {
        max([DAY, *(e.value_date for e in generated.entries)])
    }


def plenty() -> list[LedgerItem]:
    """Twenty invoices of their own reference over three days, a payout batch of three, and
    two unreferenced movements of the same amount on the same day."""
    items = [
        ledger_item(n, 1_000 * (n + 1), days=n % 3, reference=f"INV-{n}", description=f"inv {n}")
        for n in range(20)
    ]
    items += [ledger_item(20 + n, 5_000 + n, reference="PAYOUT-1") for n in range(3)]
    items += [ledger_item(23 + n, 700, description="cash") for n in range(2)]
    return items


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_full_plan_is_injected_into_a_ledger_that_allows_it(seed):
    ledger = plenty()
    plan = DifferencePlan(**{kind: 1 for kind in KINDS})
    generated = generate(ledger, seed, plan)
    assert generated.injected == {kind: 1 for kind in KINDS}
    assert reconciled(generated, ledger) == generated.truth(FILE)


# -- one case per kind, by hand ----------------------------------------------------------------

INVOICES = [
    ledger_item(1, 10_000, reference="INV-1", description="invoice 1"),
    ledger_item(2, -2_500, days=1, reference="INV-2", description="supplier"),
]


def one_of(kind: str, ledger: list[LedgerItem] = INVOICES, seed: int = 3):
    """The generated statement with one difference of `kind`, and the matcher's outcome."""
    generated = generate(ledger, seed, only(kind))
    assert generated.injected[kind] == 1
    outcome = reconciled(generated, ledger)
    assert outcome == generated.truth(FILE)
    return generated, outcome


def entry_of(generated: GeneratedStatement, reference: str):
    return [e for e in generated.entries if e.reference == reference]


def test_without_differences_every_movement_is_matched_exactly():
    ledger = [*INVOICES, ledger_item(3, 700), ledger_item(4, 700)]
    generated = generate(ledger, 0, DifferencePlan.none())
    outcome = reconciled(generated, ledger)
    assert outcome.breaks == ()
    assert [(m.rule, m.ledger_ids) for m in outcome.matches] == [
        (EXACT, ((7, 1, 0),)),
        (EXACT, ((7, 2, 0),)),
        (NO_REFERENCE, ((7, 3, 0),)),  # the two alike pair up in the order of their ids
        (NO_REFERENCE, ((7, 4, 0),)),
    ]
    assert outcome == generated.truth(FILE)


def test_a_movement_the_bank_does_not_report_is_missing_in_the_statement():
    generated, outcome = one_of("missing_in_statement")
    (missing,) = outcome.breaks
    assert missing.reason == MISSING_IN_STATEMENT
    assert len(generated.entries) == 1
    (reported,) = outcome.matches
    assert {missing.ledger_ids[0], reported.ledger_ids[0]} == {(7, 1, 0), (7, 2, 0)}


def test_an_entry_with_no_movement_is_missing_in_the_ledger():
    generated, outcome = one_of("unknown_entries")
    (unknown,) = outcome.breaks
    assert unknown.reason == MISSING_IN_LEDGER
    (entry,) = [e for e in generated.entries if e.position == unknown.statement_ids[0][1]]
    assert entry.reference.startswith("BANK-")
    assert len(outcome.matches) == 2


def test_an_amount_a_little_off_is_matched_by_the_tolerant_rule():
    _, outcome = one_of("drift_inside")
    assert outcome.breaks == ()
    (drifted,) = [m for m in outcome.matches if m.rule == TOLERANT]
    assert 0 < abs(drifted.amount_difference) <= 50
    assert drifted.date_difference_days == 0


def test_an_amount_far_off_with_the_same_reference_is_an_amount_mismatch():
    _, outcome = one_of("drift_outside")
    (mismatch,) = outcome.breaks
    assert mismatch.reason == AMOUNT_MISMATCH
    assert abs(mismatch.amount_difference) > 50
    assert len(outcome.matches) == 1


def test_a_date_shifted_within_the_window_is_matched_by_the_tolerant_rule():
    _, outcome = one_of("shift_inside")
    (shifted,) = [m for m in outcome.matches if m.rule == TOLERANT]
    assert 1 <= shifted.date_difference_days <= 3
    assert shifted.amount_difference == 0
    assert outcome.breaks == ()


def test_a_date_shifted_beyond_the_window_is_missing_on_both_sides():
    generated, outcome = one_of("shift_outside")
    assert [b.reason for b in outcome.breaks] == [MISSING_IN_LEDGER, MISSING_IN_STATEMENT]
    (entry,) = [
        e for e in generated.entries if (FILE, e.position) in outcome.breaks[0].statement_ids
    ]
    (item,) = [i for i in INVOICES if i.id == outcome.breaks[1].ledger_ids[0]]
    assert entry.reference == item.reference and entry.amount == item.amount
    assert abs((entry.value_date - item.date).days) > 3


def test_a_payment_reported_in_two_parts_is_matched_as_a_split():
    generated, outcome = one_of("splits")
    (split,) = [m for m in outcome.matches if m.rule == SPLIT]
    assert len(split.statement_ids) == 2 and len(split.ledger_ids) == 1
    (item,) = [i for i in INVOICES if i.id == split.ledger_ids[0]]
    parts = entry_of(generated, item.reference)
    assert sum(p.amount for p in parts) == item.amount
    assert split.amount_difference == 0
    assert outcome.breaks == ()


def test_a_batch_reported_as_one_entry_is_matched_as_merged():
    batch = [ledger_item(10 + n, 3_000 + n, days=n, reference="PAYOUT-7") for n in range(3)]
    generated, outcome = one_of("merges", [*INVOICES, *batch])
    (merged,) = [m for m in outcome.matches if m.rule == MERGED]
    assert merged.ledger_ids == ((7, 10, 0), (7, 11, 0), (7, 12, 0))
    (entry,) = entry_of(generated, "PAYOUT-7")
    assert entry.amount == 9_003 and entry.value_date == DAY + timedelta(days=2)
    assert (merged.amount_difference, merged.date_difference_days) == (0, 0)
    assert outcome.breaks == ()


def test_an_entry_reported_twice_is_matched_once_and_then_a_duplicate():
    generated, outcome = one_of("duplicates")
    (duplicate,) = outcome.breaks
    assert duplicate.reason == DUPLICATE
    (copy,) = [e for e in generated.entries if (FILE, e.position) in duplicate.statement_ids]
    (original,) = [e for e in entry_of(generated, copy.reference) if e is not copy]
    # The same booking again, servicer reference and all, later in the file.
    assert replace(original, position=copy.position) == copy
    assert original.position < copy.position
    (matched,) = [m for m in outcome.matches if m.statement_ids == ((FILE, original.position),)]
    assert matched.rule == EXACT


def test_a_movement_the_statement_cannot_mirror_is_refused():
    with pytest.raises(ValueError, match="not mapped"):
        generate([ledger_item(1, 5, account="acct-9")], 0, DifferencePlan.none())
    with pytest.raises(ValueError, match="white space"):
        generate([ledger_item(1, 5, reference="INV-1 ")], 0, DifferencePlan.none())
