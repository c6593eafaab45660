"""A camt.053 bank-to-customer statement read for its source: every `Ntry` ends as one entry
or one rejection with its reason and its exact bytes, each statement's closing balance is
stated as of its moment, and a file that is not a safe, well-formed camt.053 is refused whole."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from ledger_engine.reconcile.entries import (
    BAD_AMOUNT,
    BAD_DATE,
    BAD_INDICATOR,
    CURRENCY_MISMATCH,
    MALFORMED,
    MALFORMED_FILE,
    MISSING_FIELD,
    NOT_BOOKED,
    UNKNOWN_ACCOUNT,
    ParsedStatement,
    StatementBalance,
)
from ledger_engine.reconcile.formats import parse_statement
from ledger_engine.reconcile.formats.camt053 import parse_camt053
from ledger_engine.reconcile.sources import Source
from tests.support.statements import IBAN, Entry, Statement, camt053_document

OTHER_IBAN = "GB29NWBK60161331926819"
SOURCE_KEYS = {IBAN: "acct-1", OTHER_IBAN: "acct-2"}


def source(**overrides) -> Source:
    fields = {"currency": "EUR", "precision": 2, "accounts": SOURCE_KEYS, **overrides}
    return Source("Main bank", "camt053", "accounts", **fields)


SOURCE = source()


def parse(raw: bytes) -> ParsedStatement:
    return parse_statement(raw, SOURCE)


def reasons(parsed: ParsedStatement) -> list[tuple[int, str]]:
    return [(r.position, r.reason) for r in parsed.rejections]


def refused_whole(parsed: ParsedStatement) -> str:
    """The detail of a file refused as a whole (and nothing else read from it)."""
    assert parsed.entries == () and parsed.balances == ()
    (rejection,) = parsed.rejections
    assert (rejection.position, rejection.reason) == (0, MALFORMED_FILE)
    return rejection.detail


# -- entries -----------------------------------------------------------------------------------


def test_credits_are_positive_and_debits_negative_minor_units():
    raw = camt053_document([Statement(entries=[Entry(123_456), Entry(-2_050), Entry(0)])])
    parsed = parse(raw)
    assert parsed.rejections == ()
    assert [(e.position, e.account, e.amount) for e in parsed.entries] == [
        (1, "acct-1", 123_456),
        (2, "acct-1", -2_050),
        (3, "acct-1", 0),
    ]
    assert b'<Amt Ccy="EUR">1234.56</Amt>' in parsed.entries[0].raw
    assert b"<CdtDbtInd>DBIT</CdtDbtInd>" in parsed.entries[1].raw


def test_an_entry_reads_its_dates_references_and_remittance():
    entry = Entry(
        9_900,
        booking_date=date(2026, 11, 2),
        value_date=date(2026, 11, 4),
        reference="E2E-0042",
        servicer_reference="BANK-REF-7",
        remittance=("Invoice 42", " November & December "),
    )
    (read,) = parse(camt053_document([Statement(entries=[entry])])).entries
    assert (read.booking_date, read.value_date) == (date(2026, 11, 2), date(2026, 11, 4))
    assert (read.reference, read.servicer_reference) == ("E2E-0042", "BANK-REF-7")
    assert read.description == "Invoice 42 November & December"


def test_optional_fields_absent_are_none_and_notprovided_is_no_reference():
    entries = [Entry(1), Entry(2, reference="NOTPROVIDED")]
    parsed = parse(camt053_document([Statement(entries=entries)]))
    for read in parsed.entries:
        assert (read.value_date, read.reference, read.servicer_reference) == (None, None, None)
        assert read.description is None


def test_without_remittance_lines_the_additional_entry_information_describes_it():
    entries = [Entry(1, additional_info="SEPA credit transfer"), Entry(2, remittance=("rent",))]
    first, second = parse(camt053_document([Statement(entries=entries)])).entries
    assert (first.description, second.description) == ("SEPA credit transfer", "rent")


def test_a_batch_booking_joins_its_distinct_end_to_end_ids():
    entry = Entry(5_000, reference="E2E-1")
    raw = camt053_document([Statement(entries=[entry])])
    # A second transaction of the same booking, and a third repeating the first's id.
    one = b"<TxDtls>\n            <Refs><EndToEndId>E2E-1</EndToEndId></Refs>\n          </TxDtls>"
    two = one.replace(b"E2E-1", b"E2E-2")
    raw = raw.replace(one, one + two + one)
    (read,) = parse(raw).entries
    assert read.reference == "E2E-1 E2E-2"


def test_a_booking_date_time_gives_the_date_as_the_bank_wrote_it():
    late = datetime(2026, 11, 2, 23, 30, tzinfo=timezone(timedelta(hours=1)))
    entries = [Entry(1, booking_date=late, value_date=datetime(2026, 11, 3, 8, 0))]
    (read,) = parse(camt053_document([Statement(entries=entries)])).entries
    assert (read.booking_date, read.value_date) == (date(2026, 11, 2), date(2026, 11, 3))


def test_a_source_with_one_account_reads_every_statement_as_that_row():
    raw = camt053_document([Statement("XX00 anything", entries=[Entry(1)], iban=False)])
    parsed = parse_statement(raw, source(account="acct-9", accounts={}))
    assert [e.account for e in parsed.entries] == ["acct-9"]


def test_an_account_given_as_another_identifier_is_mapped_like_an_iban():
    raw = camt053_document([Statement("123456789", entries=[Entry(1)], iban=False)])
    parsed = parse_statement(raw, source(accounts={"123456789": "acct-3"}))
    assert [e.account for e in parsed.entries] == ["acct-3"]


# -- several statements, accounts, balances ----------------------------------------------------


def test_entries_are_numbered_across_the_statements_of_a_file():
    raw = camt053_document(
        [
            Statement(IBAN, entries=[Entry(100), Entry(-200)], statement_id="S-1"),
            Statement(OTHER_IBAN, entries=[Entry(300)], statement_id="S-2"),
            Statement(IBAN, entries=[], statement_id="S-3"),
        ]
    )
    parsed = parse(raw)
    assert [(e.position, e.account, e.amount) for e in parsed.entries] == [
        (1, "acct-1", 100),
        (2, "acct-1", -200),
        (3, "acct-2", 300),
    ]
    assert parsed.statement_id == "MSG-1"


def test_without_a_group_header_a_single_statement_names_the_file():
    raw = camt053_document([Statement(statement_id="2026-11-02-001")], message_id=None)
    assert parse(raw).statement_id == "2026-11-02-001"


def test_each_statement_states_its_opening_and_closing_booked_balances():
    raw = camt053_document(
        [
            Statement(IBAN, opening=10_000, closing=-2_500, closing_date=date(2026, 11, 2)),
            Statement(OTHER_IBAN, closing=7, closing_date=datetime(2026, 11, 2, 18, 30)),
        ]
    )
    balances = parse(raw).balances
    # Each balance is dated as its statement dates it (a date-time without offset is UTC), and
    # names its statement by its place in the file.
    assert balances == (
        StatementBalance("acct-1", 10_000, -2_500, date(2026, 11, 2), 1),
        StatementBalance("acct-2", None, 7, datetime(2026, 11, 2, 18, 30, tzinfo=UTC), 2),
    )
    # A bare date holds at the end of that day: the next midnight, UTC.
    assert [b.as_of for b in balances] == [
        datetime(2026, 11, 3, tzinfo=UTC),
        datetime(2026, 11, 2, 18, 30, tzinfo=UTC),
    ]


def test_a_closing_balance_date_time_keeps_its_offset():
    at = datetime(2026, 11, 2, 23, 59, 59, tzinfo=timezone(timedelta(hours=1)))
    (balance,) = parse(camt053_document([Statement(closing=1, closing_date=at)])).balances
    assert balance.as_of == at
    assert balance.as_of == datetime(2026, 11, 2, 22, 59, 59, tzinfo=UTC)


def test_the_previous_closing_balance_opens_a_statement_without_an_opening_one():
    statement = Statement(closing=500, extra_balances=[("PRCD", 300, date(2026, 11, 1))])
    (balance,) = parse(camt053_document([statement])).balances
    assert (balance.opening, balance.closing) == (300, 500)


def test_a_statement_without_a_readable_closing_balance_states_none():
    raw = camt053_document(
        [
            Statement(IBAN, opening=100),  # no CLBD
            Statement(OTHER_IBAN, closing=100, currency="USD"),  # another currency
            Statement(IBAN, closing=100, closing_date="2026-13-01"),  # not a date
        ]
    )
    assert parse_statement(raw, SOURCE).balances == ()


def test_entries_of_an_account_the_source_does_not_map_are_refused():
    raw = camt053_document(
        [
            Statement("DE02100100109307118603", entries=[Entry(1), Entry(2)], closing=3),
            Statement(IBAN, entries=[Entry(4)]),
        ]
    )
    parsed = parse(raw)
    assert reasons(parsed) == [(1, UNKNOWN_ACCOUNT), (2, UNKNOWN_ACCOUNT)]
    assert "DE02100100109307118603" in parsed.rejections[0].detail
    assert [e.position for e in parsed.entries] == [3]
    assert parsed.balances == ()  # no ledger row to compare it with


def test_a_statement_naming_no_account_misses_a_field():
    parsed = parse(camt053_document([Statement(None, entries=[Entry(1)])]))
    assert reasons(parsed) == [(1, MISSING_FIELD)]


# -- entries refused ---------------------------------------------------------------------------


def test_an_amount_in_another_currency_is_a_mismatch():
    entries = [Entry(1), Entry(2, currency="USD"), Entry(3)]
    parsed = parse(camt053_document([Statement(entries=entries)]))
    assert reasons(parsed) == [(2, CURRENCY_MISMATCH)]
    assert "USD" in parsed.rejections[0].detail
    assert [e.position for e in parsed.entries] == [1, 3]


@pytest.mark.parametrize(
    "text",
    ["1.005", "-1.00", "1,00", "1e3", "abc", "99999999999999999999.00"],
    ids=["too-many-decimals", "signed", "comma", "exponent", "words", "beyond-int64"],
)
def test_an_amount_that_is_not_exact_decimal_text_at_the_precision_is_bad(text):
    parsed = parse(camt053_document([Statement(entries=[Entry(1, amount_text=text)])]))
    assert reasons(parsed) == [(1, BAD_AMOUNT)]


def test_a_source_precision_of_zero_reads_whole_units():
    raw = camt053_document([Statement(entries=[Entry(1500), Entry(-3)])], precision=0)
    assert b'<Amt Ccy="EUR">1500</Amt>' in raw
    parsed = parse_statement(raw, source(precision=0))
    assert [e.amount for e in parsed.entries] == [1500, -3]


def test_an_empty_amount_misses_a_field():
    parsed = parse(camt053_document([Statement(entries=[Entry(1, amount_text="  ")])]))
    assert reasons(parsed) == [(1, MISSING_FIELD)]


def test_an_indicator_other_than_credit_or_debit_is_bad():
    entries = [Entry(1, indicator="XXXX"), Entry(1, indicator="crdt"), Entry(1, indicator="")]
    parsed = parse(camt053_document([Statement(entries=entries)]))
    assert reasons(parsed) == [(1, BAD_INDICATOR), (2, BAD_INDICATOR), (3, MISSING_FIELD)]


def test_an_entry_without_a_booking_date_misses_a_field():
    entries = [Entry(1, booking_date=None), Entry(2, value_date=None)]
    parsed = parse(camt053_document([Statement(entries=entries)]))
    assert reasons(parsed) == [(1, MISSING_FIELD)]
    assert "BookgDt" in parsed.rejections[0].detail


@pytest.mark.parametrize(
    "entry",
    [
        Entry(1, booking_date="2026-02-30"),
        Entry(1, booking_date="02.11.2026"),
        Entry(1, booking_date="2026-11-02T10:00:00"),  # a date-time written in Dt
        Entry(1, value_date="yesterday"),
    ],
    ids=["no-such-day", "german", "time-in-dt", "value-date"],
)
def test_a_date_that_is_not_an_iso_date_is_bad(entry):
    parsed = parse(camt053_document([Statement(entries=[entry])]))
    assert reasons(parsed) == [(1, BAD_DATE)]


def test_a_bad_date_time_is_bad():
    raw = camt053_document([Statement(entries=[Entry(1, value_date=datetime(2026, 11, 2))])])
    raw = raw.replace(b"2026-11-02T00:00:00", b"2026-11-02T25:00:00")
    assert reasons(parse(raw)) == [(1, BAD_DATE)]


@pytest.mark.parametrize("version", [2, 8])
def test_only_booked_entries_are_loaded_the_others_are_refused_as_not_booked(version):
    entries = [
        Entry(1),
        Entry(2, status="PDNG"),
        Entry(3, status="INFO"),
        Entry(4, status="FUTR"),
        Entry(5, status="SOMETHING"),
    ]
    parsed = parse(camt053_document([Statement(entries=entries)], version=version))
    assert [e.amount for e in parsed.entries] == [1]
    assert reasons(parsed) == [(2, NOT_BOOKED), (3, NOT_BOOKED), (4, NOT_BOOKED), (5, MALFORMED)]
    assert "pending" in parsed.rejections[0].detail
    assert parsed.count == 5  # every Ntry of the file accounted for


def test_an_entry_without_a_status_misses_a_field():
    raw = camt053_document([Statement(entries=[Entry(1)])])
    raw = raw.replace(b"<Sts><Cd>BOOK</Cd></Sts>", b"")
    assert reasons(parse(raw)) == [(1, MISSING_FIELD)]


def test_an_empty_entry_element_is_refused_with_its_bytes():
    raw = camt053_document([Statement(entries=[Entry(1), Entry(2)])])
    first = raw.index(b"<Ntry>")
    raw = raw[:first] + b'<Ntry  Note="a > b"/>' + raw[first:]
    parsed = parse(raw)
    assert reasons(parsed) == [(1, MISSING_FIELD)]
    assert parsed.rejections[0].raw == b'<Ntry  Note="a > b"/>'
    assert [e.amount for e in parsed.entries] == [1, 2]


# -- raw bytes ---------------------------------------------------------------------------------


def test_the_raw_bytes_of_each_entry_are_exactly_its_element_in_the_file():
    entries = [Entry(1, remittance=("Müller & Söhne <GmbH>",)), Entry(2, status="PDNG")]
    raw = camt053_document([Statement(entries=entries), Statement(entries=[Entry(-3)])])
    parsed = parse(raw)
    elements = _elements(raw, b"<Ntry>", b"</Ntry>")
    outcomes = sorted([*parsed.entries, *parsed.rejections], key=lambda o: o.position)
    assert [o.raw for o in outcomes] == elements
    assert "Müller & Söhne <GmbH>".encode() not in elements[0]  # as written: escaped
    assert "Müller &amp; Söhne &lt;GmbH&gt;".encode() in elements[0]


def test_raw_bytes_are_found_by_the_parser_not_by_searching_the_text():
    raw = camt053_document([Statement(entries=[Entry(1), Entry(2)])], prefix="camt")
    # An Ntry look-alike in a comment and in character data is not an entry.
    raw = raw.replace(b"<camt:Stmt>", b"<camt:Stmt><!-- <camt:Ntry>old</camt:Ntry> -->", 1)
    raw = raw.replace(b"<camt:Id>STMT-1", b"<camt:Id><![CDATA[<camt:Ntry>]]>STMT-1", 1)
    parsed = parse(raw)
    assert [e.raw for e in parsed.entries] == _elements(raw, b"<camt:Ntry>\n", b"</camt:Ntry>")
    assert parsed.statement_id == "MSG-1"


def _elements(raw: bytes, start: bytes, end: bytes) -> list[bytes]:
    """Each slice of `raw` from a `start` to the next `end`, inclusive."""
    found, at = [], raw.find(start)
    while at >= 0:
        stop = raw.index(end, at) + len(end)
        found.append(raw[at:stop])
        at = raw.find(start, stop)
    return found


# -- namespaces and versions -------------------------------------------------------------------


@pytest.mark.parametrize("version", range(2, 14))
def test_every_version_from_02_to_13_is_read(version):
    raw = camt053_document([Statement(entries=[Entry(1), Entry(-1)], closing=0)], version=version)
    assert f"camt.053.001.{version:02d}".encode() in raw
    parsed = parse(raw)
    assert [e.amount for e in parsed.entries] == [1, -1]
    assert len(parsed.balances) == 1


def test_a_document_without_a_namespace_or_with_a_prefix_is_read():
    for raw in (
        camt053_document([Statement(entries=[Entry(7)])], version=None),
        camt053_document([Statement(entries=[Entry(7)])], prefix="c"),
    ):
        assert [e.amount for e in parse(raw).entries] == [7]


@pytest.mark.parametrize("version", [1, 14, 99])
def test_versions_outside_02_to_13_are_refused(version):
    raw = camt053_document([Statement(entries=[Entry(1)])], version=version)
    assert f"camt.053.001.{version:02d}" in refused_whole(parse(raw))


@pytest.mark.parametrize(
    "raw",
    [
        camt053_document([Statement(entries=[Entry(1)])]).replace(b"camt.053", b"camt.054"),
        camt053_document([Statement(entries=[Entry(1)])]).replace(b"Document", b"Doc"),
        b'<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.08"/>',
        b"<Document><BkToCstmrStmt><GrpHdr/></BkToCstmrStmt></Document>",
        b"<Document><BkToCstmrStmt/><Stmt><Ntry/></Stmt></Document>",
    ],
    ids=["camt054", "other-root", "empty", "no-statement", "misplaced"],
)
def test_a_document_that_is_not_a_camt053_statement_is_refused_whole(raw):
    assert refused_whole(parse(raw))


def test_entries_in_another_namespace_than_the_documents_are_not_its_entries():
    raw = camt053_document([Statement(entries=[Entry(1)])])
    raw = raw.replace(b"<Ntry>", b'<Ntry xmlns="urn:example:other">', 1)
    parsed = parse(raw)
    assert parsed.count == 0


# -- files refused whole -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"Date,Amount\n2026-11-02,1.00\n",
        b"\x00\xff\xfe garbage",
        b"<Document>",
        camt053_document([Statement(entries=[Entry(1), Entry(2)])])[:-40],  # cut short
        camt053_document([Statement(entries=[Entry(1)])]).replace(b"</Amt>", b"</Amount>"),
        camt053_document([Statement(entries=[Entry(1)])]) + b"<Document/>",
        b"<Document>&undeclared;</Document>",
        "<Document>\udcff</Document>".encode("utf-8", "surrogatepass"),
    ],
    ids=[
        "empty",
        "csv",
        "binary",
        "unclosed",
        "cut-short",
        "mismatched-tag",
        "two-roots",
        "undeclared-entity",
        "bad-utf8",
    ],
)
def test_bytes_that_are_not_well_formed_xml_are_refused_whole(raw):
    parsed = parse(raw)
    assert refused_whole(parsed)
    assert parsed.rejections[0].raw == raw


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE Document [
  <!ENTITY lol "lol">
  <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
  <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
  <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
  <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<Document><BkToCstmrStmt><Stmt><Ntry><AddtlNtryInf>&lol9;</AddtlNtryInf></Ntry></Stmt>
</BkToCstmrStmt></Document>
"""
EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE Document [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<Document><BkToCstmrStmt><Stmt><Ntry><AddtlNtryInf>&secret;</AddtlNtryInf></Ntry></Stmt>
</BkToCstmrStmt></Document>
"""
BARE_DOCTYPE = b'<!DOCTYPE Document SYSTEM "http://example.com/camt.dtd"><Document/>'


@pytest.mark.parametrize(
    "raw", [BILLION_LAUGHS, EXTERNAL_ENTITY, BARE_DOCTYPE], ids=["bomb", "external", "doctype"]
)
def test_a_document_type_declaration_is_refused_whole_unread(raw):
    parsed = parse(raw)
    assert "DOCTYPE" in refused_whole(parsed)
    assert parsed.rejections[0].raw == raw


def test_a_file_in_another_encoding_than_utf8_is_refused_whole():
    document = camt053_document([Statement(entries=[Entry(1, remittance=("Müller",))])])
    utf16 = document.decode().replace('encoding="UTF-8"', 'encoding="UTF-16"').encode("utf-16")
    latin1 = document.decode().replace("UTF-8", "ISO-8859-1").encode("latin-1")
    assert "UTF-8" in refused_whole(parse(utf16))
    assert "ISO-8859-1" in refused_whole(parse(latin1))
    # A UTF-8 byte order mark is UTF-8, and the raw bytes keep their offsets past it.
    parsed = parse(b"\xef\xbb\xbf" + document)
    assert parsed.entries[0].raw == _elements(document, b"<Ntry>", b"</Ntry>")[0]


def test_the_parser_is_reached_through_the_sources_format():
    raw = camt053_document([Statement(entries=[Entry(1)])])
    assert parse_statement(raw, SOURCE) == parse_camt053(raw, SOURCE)
