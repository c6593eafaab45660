"""The camt.053 writer reads back as written, and the statement generator's truth is what the
reference matcher concludes over the generated statement: every injected difference found with
its reason, every mirrored movement matched, no other match; the same seed, the same file."""

from __future__ import annotations

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
        StatementBalance(keys[s.account_id], s.opening, s.closing_balance, _as_of(s.closing_date))
        for s in statements
    ]
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
