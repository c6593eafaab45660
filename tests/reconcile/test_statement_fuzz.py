"""No statement file crashes a parser: arbitrary bytes, and valid CSV and camt.053 statements
with bytes flipped, inserted or deleted, cut short and lines duplicated.

For every input, both parsers (`parse_csv` through a small layout, `parse_camt053`) return
without raising; every outcome has its own position; a file refused whole is one
`malformed_file` rejection holding all of its bytes, and otherwise every entry and every
rejection (its reason one of `entries.REASONS`) holds non-empty bytes taken from the input. A
CSV statement has one outcome per non-blank record after its header; a camt.053 statement's
outcomes are numbered 1..n, each the bytes of an `Ntry` element. Valid statements, unmutated,
read back exactly as they were written.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ledger_engine.reconcile.entries import (
    CURRENCY_MISMATCH,
    MALFORMED_FILE,
    NOT_BOOKED,
    REASONS,
    UNKNOWN_ACCOUNT,
    ParsedStatement,
)
from ledger_engine.reconcile.formats.camt053 import parse_camt053
from ledger_engine.reconcile.formats.csv_statement import parse_csv
from ledger_engine.reconcile.sources import CsvLayout, Source
from tests.support.statements import IBAN, Entry, Statement, camt053_document, decimal_text

KNOWN, UNKNOWN = "DE01", "DE02"
CSV_COLUMNS = {
    "booking_date": "Date",
    "amount": "Amount",
    "credit_debit": "CD",
    "account": "Account",
    "currency": "Ccy",
    "reference": "Ref",
    "balance": "Balance",
}
CSV_HEADER = "Date,Amount,CD,Account,Ccy,Ref,Balance"
CSV_SOURCE = Source(
    "fuzz csv", "csv", "accounts", "EUR", 2, accounts={KNOWN: "acct-1"}, csv=CsvLayout(CSV_COLUMNS)
)
OTHER_IBAN = "GB29NWBK60161331926819"
CAMT_SOURCE = Source("fuzz camt", "camt053", "accounts", "EUR", 2, accounts={IBAN: "acct-1"})

FAST = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)

# -- generated input ---------------------------------------------------------------------------

# Bytes that matter to one format or the other, so that mutations often hit structure.
SPECIAL = [b"<", b">", b"/", b'"', b"'", b"&", b";", b",", b"\n", b"\r", b"\x00", b"\xff", b"-"]
any_byte = st.one_of(st.sampled_from(SPECIAL), st.binary(min_size=1, max_size=1))


# An element's text, or a CSV field: what a bank writes where a value goes.
_TEXT_NODE = re.compile(rb"[>,]([^<>,\n]*)[<,\n]")
field_values = st.one_of(
    st.sampled_from(
        [
            *(b"", b" ", b"1.005", b"-1.00", b"1e3", b"DBIT", b"XXXX", b"PDNG", b"USD"),
            *(b"2026-02-30", b"2026-11-02T25:00:00", b"99999999999999999999", b"NOTPROVIDED"),
            *(b"&amp;", b"\xff"),
        ]
    ),
    st.text(max_size=6).map(lambda text: text.encode("utf-8", "surrogatepass")),
)


@st.composite
def mutated(draw: st.DrawFn, documents: st.SearchStrategy[bytes]) -> bytes:
    """A document of `documents` with one to three mutations: a byte flipped, bytes inserted or
    deleted, the file cut short, a line duplicated, a value (an element's text, a CSV field)
    replaced."""
    raw = draw(documents)
    for _ in range(draw(st.integers(1, 3))):
        if not raw:
            break
        at = draw(st.integers(0, len(raw) - 1))
        # Values replaced half the time: most other mutations leave XML not well-formed.
        kind = draw(
            st.sampled_from(["flip", "insert", "delete", "cut", "duplicate", *["value"] * 5])
        )
        texts = [m.span(1) for m in _TEXT_NODE.finditer(raw)]
        if kind == "value" and texts:
            # A value replaced, markup intact: the document stays well-formed XML (mostly).
            start, end = draw(st.sampled_from(texts))
            raw = raw[:start] + draw(field_values) + raw[end:]
        elif kind == "flip":
            raw = raw[:at] + draw(any_byte) + raw[at + 1 :]
        elif kind == "insert":
            inserted = draw(st.lists(any_byte, min_size=1, max_size=4))
            raw = raw[:at] + b"".join(inserted) + raw[at:]
        elif kind == "delete":
            raw = raw[:at] + raw[at + draw(st.integers(1, 8)) :]
        elif kind == "cut":
            raw = raw[:at]
        elif kind == "duplicate":
            lines = raw.splitlines(keepends=True)
            line = draw(st.integers(0, len(lines) - 1))
            raw = b"".join(lines[: line + 1] + lines[line:])
    return raw


# Text a bank may write: any character XML allows, no control characters.
xml_text = st.text(st.characters(exclude_categories=("Cc", "Cs", "Cn")), max_size=12)
amounts = st.integers(-(10**15), 10**15)
days = st.dates(date(1990, 1, 1), date(2090, 12, 31))

camt_entries = st.builds(
    Entry,
    amount=amounts,
    booking_date=days,
    value_date=st.none() | days,
    reference=st.none() | st.just("NOTPROVIDED") | xml_text,
    servicer_reference=st.none() | xml_text,
    remittance=st.lists(xml_text, max_size=3),
    status=st.sampled_from(["BOOK", "BOOK", "BOOK", "PDNG"]),
    currency=st.sampled_from([None, None, None, "USD"]),
)
camt_statements = st.builds(
    Statement,
    account=st.sampled_from([IBAN, IBAN, OTHER_IBAN]),
    entries=st.lists(camt_entries, max_size=4),
    opening=st.none() | amounts,
    closing=st.none() | amounts,
)
camt_specs = st.tuples(st.lists(camt_statements, min_size=1, max_size=3), st.sampled_from([2, 8]))
camt_documents = camt_specs.map(lambda spec: camt053_document(spec[0], version=spec[1]))


# One CSV record: (day, amount in minor units, account, currency, reference, balance).
csv_records = st.tuples(
    days,
    amounts,
    st.sampled_from([KNOWN, KNOWN, UNKNOWN]),
    st.sampled_from(["EUR", "EUR", "EUR", "USD"]),
    st.text(st.characters(codec="utf-8", exclude_characters=',"\r\n'), max_size=8),
    st.none() | amounts,
)


def csv_document(records: list[tuple], newline: str = "\n") -> bytes:
    """A CSV statement in `CSV_SOURCE`'s layout: amounts unsigned beside a C/D column."""
    lines = [CSV_HEADER]
    for day, amount, account, currency, reference, balance in records:
        written = decimal_text(abs(amount), 2)
        sign = "C" if amount >= 0 else "D"
        balance_text = ""  # a running balance, signed, where the bank states one
        if balance is not None:
            balance_text = ("-" if balance < 0 else "") + decimal_text(abs(balance), 2)
        fields = [day.isoformat(), written, sign, account, currency, reference, balance_text]
        lines.append(",".join(fields))
    return (newline.join(lines) + newline).encode("utf-8")


csv_documents = st.builds(
    csv_document, st.lists(csv_records, max_size=6), st.sampled_from(["\n", "\r\n"])
)

# -- what holds for every input ----------------------------------------------------------------


def check_outcomes(raw: bytes, parsed: ParsedStatement) -> bool:
    """The properties every parse satisfies; whether the file was refused whole."""
    outcomes = [*parsed.entries, *parsed.rejections]
    positions = [o.position for o in outcomes]
    assert len(positions) == len(set(positions))
    for rejection in parsed.rejections:
        assert rejection.reason in REASONS
        assert rejection.detail
    if any(r.reason == MALFORMED_FILE for r in parsed.rejections):
        (rejection,) = parsed.rejections
        assert parsed.entries == () and parsed.balances == ()
        assert (rejection.position, rejection.raw) == (0, raw)
        return True
    for outcome in outcomes:
        assert outcome.position >= 1
        assert outcome.raw and outcome.raw in raw
    return False


def nonblank_lines(raw: bytes) -> list[int]:
    """The 1-based numbers of the lines of `raw` that hold more than white space."""
    return [n for n, line in enumerate(raw.splitlines(), 1) if line.strip()]


def check_csv(raw: bytes) -> ParsedStatement:
    parsed = parse_csv(raw, CSV_SOURCE)
    if check_outcomes(raw, parsed):
        return parsed
    lines = raw.splitlines(keepends=True)
    nonblank = nonblank_lines(raw)
    # Each outcome is a record: the consecutive lines from its position on, after the header
    # (the first non-blank line), none of them shared with another record.
    covered: set[int] = set()
    for outcome in sorted([*parsed.entries, *parsed.rejections], key=lambda o: o.position):
        assert outcome.position in nonblank[1:]
        start = outcome.position - 1
        end = next(
            stop
            for stop in range(start + 1, len(lines) + 1)
            if b"".join(lines[start:stop]) == outcome.raw
        )
        assert covered.isdisjoint(range(start, end))
        covered.update(range(start, end))
    if b'"' not in raw:
        # Without quotes no record spans lines: one outcome per non-blank line after the header.
        assert parsed.count == len(nonblank) - 1
    return parsed


def check_camt(raw: bytes) -> ParsedStatement:
    parsed = parse_camt053(raw, CAMT_SOURCE)
    if check_outcomes(raw, parsed):
        return parsed
    outcomes = [*parsed.entries, *parsed.rejections]
    assert sorted(o.position for o in outcomes) == list(range(1, parsed.count + 1))
    for outcome in outcomes:
        assert outcome.raw.startswith(b"<Ntry")
        assert outcome.raw.endswith((b"</Ntry>", b"/>"))
    assert parsed.count <= raw.count(b"<Ntry")
    return parsed


PARSERS: dict[str, Callable[[bytes], ParsedStatement]] = {"csv": check_csv, "camt053": check_camt}

# -- the properties ----------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", PARSERS)
@FAST
@given(raw=st.binary(max_size=400))
@example(raw=b"")
@example(raw=b"\n\n \r\n")
@example(raw=b"\xef\xbb\xbf")
def test_arbitrary_bytes_never_crash_a_parser(fmt, raw):
    PARSERS[fmt](raw)


@pytest.mark.parametrize("fmt", PARSERS)
@FAST
@given(data=st.data())
def test_arbitrary_text_in_the_formats_alphabet_never_crashes_a_parser(fmt, data):
    # Random bytes are rarely a header or a tag; text built from the formats' own pieces is.
    pieces = {
        "csv": [CSV_HEADER, "\n", ",", '"', "C", "D", "DE01", "EUR", "2026-11-02", "1.00", " "],
        "camt053": [
            '<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.08">',
            "</Document>",
            "<BkToCstmrStmt>",
            "</BkToCstmrStmt>",
            "<Stmt>",
            "</Stmt>",
            "<Ntry>",
            "</Ntry>",
            "<Ntry/>",
            f"<Acct><Id><IBAN>{IBAN}</IBAN></Id></Acct>",
            '<Amt Ccy="EUR">1.00</Amt>',
            "<CdtDbtInd>DBIT</CdtDbtInd>",
            "<Sts>BOOK</Sts>",
            "<BookgDt><Dt>2026-11-02</Dt></BookgDt>",
            "<Bal><Tp><CdOrPrtry><Cd>CLBD</Cd></CdOrPrtry></Tp>",
            "</Bal>",
            "<Dt><DtTm>2026-11-02T10:00:00+01:00</DtTm></Dt>",
            "<!-- <Ntry> -->",
            "&amp;",
            "\n",
        ],
    }[fmt]
    raw = "".join(data.draw(st.lists(st.sampled_from(pieces), max_size=30))).encode()
    PARSERS[fmt](raw)


@FAST
@given(raw=mutated(csv_documents))
def test_a_mutated_csv_statement_never_crashes_and_its_counts_add_up(raw):
    check_csv(raw)


@FAST
@given(raw=mutated(camt_documents))
def test_a_mutated_camt053_statement_never_crashes_and_its_entries_are_its_elements(raw):
    check_camt(raw)


@FAST
@given(records=st.lists(csv_records, max_size=6))
def test_a_valid_csv_statement_reads_back_as_written(records):
    raw = csv_document(records)
    parsed = check_csv(raw)
    assert parsed.count == len(records)
    outcomes = {o.position: o for o in [*parsed.entries, *parsed.rejections]}
    for line, (day, amount, account, currency, reference, _) in enumerate(records, 2):
        read = outcomes[line]
        if currency != "EUR":
            assert read.reason == CURRENCY_MISMATCH
        elif account != KNOWN:
            assert read.reason == UNKNOWN_ACCOUNT
        else:
            assert (read.account, read.amount, read.booking_date) == ("acct-1", amount, day)
            assert read.reference == (reference.strip() or None)


@FAST
@given(spec=camt_specs)
def test_a_valid_camt053_statement_reads_back_as_written(spec):
    statements, version = spec
    raw = camt053_document(statements, version=version)
    parsed = check_camt(raw)
    written = [(s, e) for s in statements for e in s.entries]
    assert parsed.count == len(written)
    outcomes = {o.position: o for o in [*parsed.entries, *parsed.rejections]}
    for position, (statement, entry) in enumerate(written, 1):
        read = outcomes[position]
        if entry.status != "BOOK":
            assert read.reason == NOT_BOOKED
        elif statement.account != IBAN:
            assert read.reason == UNKNOWN_ACCOUNT
        elif entry.currency is not None:
            assert read.reason == CURRENCY_MISMATCH
        else:
            assert (read.account, read.amount) == ("acct-1", entry.amount)
            assert (read.booking_date, read.value_date) == (entry.booking_date, entry.value_date)
            reference = None if entry.reference is None else entry.reference.strip()
            assert read.reference == (None if reference == "NOTPROVIDED" else reference or None)
            servicer = entry.servicer_reference
            assert read.servicer_reference == (servicer.strip() or None if servicer else None)
            lines = [line.strip() for line in entry.remittance if line.strip()]
            assert read.description == (" ".join(lines) or None)
    balances = [s for s in statements if s.account == IBAN and s.closing is not None]
    assert [(b.opening, b.closing) for b in parsed.balances] == [
        (s.opening, s.closing) for s in balances
    ]


def test_a_csv_field_beyond_the_csv_modules_size_limit_refuses_the_file():
    raw = CSV_HEADER.encode() + b'\n"' + b"x" * 200_000 + b"\n"
    check_csv(raw)
    (rejection,) = parse_csv(raw, CSV_SOURCE).rejections
    assert rejection.reason == "malformed_file" and "field larger than" in rejection.detail
