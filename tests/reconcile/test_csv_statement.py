"""A CSV statement read through its source's declared layout: every record ends as one entry
or one rejection with its reason and raw bytes; a file that cannot be read is refused whole."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from ledger_engine.reconcile.entries import (
    BAD_AMOUNT,
    BAD_DATE,
    BAD_INDICATOR,
    CURRENCY_MISMATCH,
    MALFORMED,
    MALFORMED_FILE,
    MISSING_FIELD,
    UNKNOWN_ACCOUNT,
)
from ledger_engine.reconcile.formats import parse_statement
from ledger_engine.reconcile.sources import CsvLayout, Source

COLUMNS = {
    "booking_date": "Date",
    "value_date": "Value",
    "amount": "Amount",
    "reference": "Ref",
    "description": "Text",
}
SOURCE = Source("bank", "csv", "accounts", "EUR", 2, account="acct-1", csv=CsvLayout(COLUMNS))


def source(**layout) -> Source:
    columns = layout.pop("columns", COLUMNS)
    account = layout.pop("account", "acct-1")
    accounts = layout.pop("accounts", {})
    return Source(
        "bank", "csv", "accounts", "EUR", 2, account, accounts, CsvLayout(columns, **layout)
    )


def test_each_record_is_an_entry_of_signed_minor_units():
    raw = (
        b"Date,Value,Amount,Ref,Text\n"
        b"2026-11-02,2026-11-03,1234.56,E2E-1,salary november\n"
        b"2026-11-04,,-20.5,,\n"
    )
    parsed = parse_statement(raw, SOURCE)
    assert parsed.rejections == ()
    first, second = parsed.entries
    assert (first.position, first.account, first.amount) == (2, "acct-1", 123_456)
    assert (first.booking_date, first.value_date) == (date(2026, 11, 2), date(2026, 11, 3))
    assert (first.reference, first.description) == ("E2E-1", "salary november")
    assert first.raw == b"2026-11-02,2026-11-03,1234.56,E2E-1,salary november\n"
    assert (second.amount, second.value_date, second.reference) == (-2_050, None, None)


def test_a_layout_reads_european_numbers_dates_and_a_credit_debit_column():
    layout = source(
        columns={"booking_date": "Datum", "amount": "Betrag", "credit_debit": "S/H"},
        delimiter=";",
        date_format="%d.%m.%Y",
        decimal_separator=",",
        thousands_separator=".",
        credit_values=frozenset({"H"}),
        debit_values=frozenset({"S"}),
    )
    raw = b"Datum;Betrag;S/H\n02.11.2026;1.234,50;H\n03.11.2026;7,00;S\n"
    parsed = parse_statement(raw, layout)
    assert [e.amount for e in parsed.entries] == [123_450, -700]
    assert parsed.entries[1].booking_date == date(2026, 11, 3)


def test_a_utf8_byte_order_mark_and_blank_lines_are_not_entries():
    raw = b"\xef\xbb\xbfDate,Value,Amount,Ref,Text\r\n\r\n2026-11-02,,1.00,,\r\n\n"
    parsed = parse_statement(raw, SOURCE)
    assert [e.position for e in parsed.entries] == [3]
    assert parsed.count == 1


def test_a_quoted_field_may_hold_the_delimiter_and_a_line_break():
    raw = b'Date,Value,Amount,Ref,Text\n2026-11-02,,5.00,R1,"rent, flat 3\nsecond line"\n'
    (entry,) = parse_statement(raw, SOURCE).entries
    assert entry.description == "rent, flat 3\nsecond line"
    assert entry.raw == b'2026-11-02,,5.00,R1,"rent, flat 3\nsecond line"\n'


@pytest.mark.parametrize(
    ("record", "reason", "detail"),
    [
        (b"2026-11-02,,12.345,,", BAD_AMOUNT, "more than 2 decimal places"),
        (b"2026-11-02,,12 EUR,,", BAD_AMOUNT, "not a decimal amount"),
        (b"2026-11-02,,1e3,,", BAD_AMOUNT, "not a decimal amount"),
        (b"2026-11-02,,99999999999999999999,,", BAD_AMOUNT, "beyond the int64 range"),
        (b"2026-11-02,,,,", MISSING_FIELD, "'Amount' (amount) is empty"),
        (b",,5.00,,", MISSING_FIELD, "'Date' (booking_date) is empty"),
        (b"02/11/2026,,5.00,,", BAD_DATE, "booking_date '02/11/2026' is not a date"),
        (b"2026-11-02,2026-13-01,5.00,,", BAD_DATE, "value_date '2026-13-01'"),
        (b"2026-11-02,,5.00,,,extra", MALFORMED, "6 fields, the header 5"),
        (b"2026-11-02,,5.00,\xff\xfe,", MALFORMED, "not valid utf-8"),
    ],
)
def test_a_bad_record_is_rejected_with_its_reason_and_raw_bytes(record, reason, detail):
    raw = b"Date,Value,Amount,Ref,Text\n2026-11-01,,1.00,,\n" + record + b"\n"
    parsed = parse_statement(raw, SOURCE)
    assert [e.position for e in parsed.entries] == [2]
    (rejection,) = parsed.rejections
    assert (rejection.position, rejection.reason) == (3, reason)
    assert detail in rejection.detail
    assert rejection.raw == record + b"\n"


def test_credit_debit_values_the_layout_does_not_know_are_rejected():
    layout = source(columns={"booking_date": "D", "amount": "A", "credit_debit": "CD"})
    raw = b"D,A,CD\n2026-11-02,5.00,X\n2026-11-02,-5.00,D\n2026-11-02,5.00,D\n"
    parsed = parse_statement(raw, layout)
    assert [(r.position, r.reason) for r in parsed.rejections] == [
        (2, BAD_INDICATOR),
        (3, BAD_AMOUNT),
    ]
    assert [e.amount for e in parsed.entries] == [-500]


def test_accounts_are_mapped_to_ledger_keys_and_an_unmapped_one_is_rejected():
    layout = source(
        columns={"booking_date": "D", "amount": "A", "account": "IBAN", "currency": "Ccy"},
        account=None,
        accounts={"DE01": "acct-1", "DE02": "acct-2"},
    )
    raw = (
        b"D,A,IBAN,Ccy\n2026-11-02,1.00,DE02,EUR\n2026-11-02,1.00,DE99,EUR\n"
        b"2026-11-02,1.00,DE01,USD\n2026-11-02,1.00,,EUR\n"
    )
    parsed = parse_statement(raw, layout)
    assert [(e.position, e.account) for e in parsed.entries] == [(2, "acct-2")]
    assert [(r.position, r.reason) for r in parsed.rejections] == [
        (3, UNKNOWN_ACCOUNT),
        (4, CURRENCY_MISMATCH),
        (5, MISSING_FIELD),
    ]


def test_a_running_balance_column_gives_the_closing_balance_at_the_end_of_its_day():
    layout = source(columns={"booking_date": "D", "amount": "A", "balance": "Saldo"})
    raw = b"D,A,Saldo\n2026-11-02,10.00,110.00\n2026-11-03,-4.00,106.00\n"
    (balance,) = parse_statement(raw, layout).balances
    assert (balance.account, balance.opening, balance.closing) == ("acct-1", None, 10_600)
    assert balance.as_of == datetime(2026, 11, 4, tzinfo=UTC)


@pytest.mark.parametrize(
    ("raw", "detail"),
    [
        (b"", "no header line"),
        (b"\n \n", "no header line"),
        (b"Date,Amount\n2026-11-02,1.00\n", "lacks 'Value', 'Ref', 'Text'"),
        (b"\xff\xfeD\x00\n", "header line is not valid utf-8"),
    ],
)
def test_a_file_that_cannot_be_read_is_refused_whole(raw, detail):
    parsed = parse_statement(raw, SOURCE)
    (rejection,) = parsed.rejections
    assert (rejection.position, rejection.reason, rejection.raw) == (0, MALFORMED_FILE, raw)
    assert detail in rejection.detail
    assert parsed.entries == ()
