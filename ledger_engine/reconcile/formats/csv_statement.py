"""Reading a CSV statement through its source's declared layout (`sources.CsvLayout`).

The first non-blank line is the header; each later non-blank record is one entry, at the
position of its first line in the file. A record ends as a `StatementEntry` or as an
`EntryRejection` holding its raw bytes: bytes that are not valid in the source's encoding or a
record with another number of fields than the header (`malformed`), an empty required field
(`missing_field`), an amount that is not a decimal within the source's precision (`bad_amount`),
a date not in the source's format (`bad_date`), a credit/debit value the layout does not know
(`bad_indicator`), an account the source maps to no ledger key (`unknown_account`) or another
currency than the source's (`currency_mismatch`). A file without a header, or whose header
lacks a column the layout names, or that the csv module cannot read at all (a field longer than
its limit of 131,072 characters: an unterminated quote in a large file), is refused as a whole
(`malformed_file`).

Where the layout maps a `balance` column (the running balance after each entry, as many banks'
exports have), the last record that states one gives the account's closing balance, as of the
end of its booking day (UTC).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Mapping
from datetime import date

from ledger_engine.reconcile.amounts import AmountProblem, minor_units, parse_date
from ledger_engine.reconcile.entries import (
    BAD_AMOUNT,
    BAD_DATE,
    BAD_INDICATOR,
    CURRENCY_MISMATCH,
    MALFORMED,
    MISSING_FIELD,
    UNKNOWN_ACCOUNT,
    EntryRejection,
    ParsedStatement,
    StatementBalance,
    StatementEntry,
    balance_moment,
    rejected_file,
)
from ledger_engine.reconcile.formats.refused import Refused
from ledger_engine.reconcile.sources import CsvLayout, Source

_BOM = "\ufeff"


def parse_csv(raw: bytes, source: Source) -> ParsedStatement:
    """Every record of the CSV statement `raw`, read as `source` declares (see the module)."""
    layout = source.csv
    assert layout is not None and source.format == "csv", source
    try:
        records = list(_records(raw, layout))
    except csv.Error as unreadable:  # e.g. a field past the csv module's size limit
        return rejected_file(f"the file cannot be read as CSV: {unreadable}", raw)
    if not records:
        return rejected_file("the file has no header line", raw)
    header_position, _, header = records[0]
    if header is None:
        return rejected_file(f"the header line is not valid {layout.encoding}", raw)
    header = [name.strip() for name in header]
    header[0] = header[0].removeprefix(_BOM)
    missing = [c for c in layout.columns.values() if c not in header]
    if missing:
        named = ", ".join(map(repr, missing))
        return rejected_file(f"the header (line {header_position}) lacks {named}", raw)
    index = {field: header.index(column) for field, column in layout.columns.items()}
    entries: list[StatementEntry] = []
    rejections: list[EntryRejection] = []
    balances: dict[str, StatementBalance] = {}
    for position, record_bytes, fields in records[1:]:
        try:
            if fields is None:
                raise Refused(MALFORMED, f"the record is not valid {layout.encoding}")
            if len(fields) != len(header):
                raise Refused(
                    MALFORMED, f"the record has {len(fields)} fields, the header {len(header)}"
                )
            values = {field: fields[i].strip() for field, i in index.items()}
            entry, balance = _entry(position, values, record_bytes, source, layout)
        except Refused as refused:
            rejections.append(
                EntryRejection(position, refused.reason, refused.detail, record_bytes)
            )
            continue
        entries.append(entry)
        if balance is not None:
            try:
                balance_moment(entry.booking_date)
            except OverflowError:  # a day that has no end (9999-12-31): no balance to keep
                continue
            balances[entry.account] = StatementBalance(
                entry.account, None, balance, entry.booking_date
            )
    return ParsedStatement(None, tuple(entries), tuple(rejections), tuple(balances.values()))


def _records(raw: bytes, layout: CsvLayout) -> Iterator[tuple[int, bytes, list[str] | None]]:
    """(position of its first line, raw bytes, fields or `None` if not decodable) of each
    non-blank record; a quoted field may span lines."""
    lines = raw.splitlines(keepends=True)
    text_lines = [line.decode(layout.encoding, errors="surrogateescape") for line in lines]
    reader = csv.reader(iter(text_lines), delimiter=layout.delimiter, strict=False)
    consumed = 0
    for fields in reader:
        start, consumed = consumed, reader.line_num
        record = b"".join(lines[start:consumed])
        if not record.strip():
            continue
        decodable = all(not _has_surrogates(text) for text in text_lines[start:consumed])
        yield start + 1, record, fields if decodable else None


def _has_surrogates(text: str) -> bool:
    return any("\udc80" <= c <= "\udcff" for c in text)


def _entry(
    position: int, values: Mapping[str, str], raw: bytes, source: Source, layout: CsvLayout
) -> tuple[StatementEntry, int | None]:
    booking_date = _date(values, "booking_date", layout, required=True)
    assert booking_date is not None
    amount = _amount(values, "amount", source, layout)
    assert amount is not None
    indicator = values.get("credit_debit")
    if indicator is not None:
        amount = _signed(amount, indicator, layout)
    currency = values.get("currency")
    if currency is not None and currency != source.currency:
        raise Refused(
            CURRENCY_MISMATCH, f"currency {currency!r}, the source's is {source.currency}"
        )
    account = _account(values, source)
    entry = StatementEntry(
        position=position,
        account=account,
        amount=amount,
        booking_date=booking_date,
        value_date=_date(values, "value_date", layout, required=False),
        reference=values.get("reference") or None,
        servicer_reference=values.get("servicer_reference") or None,
        description=values.get("description") or None,
        raw=raw,
    )
    balance = _amount(values, "balance", source, layout) if values.get("balance") else None
    return entry, balance


def _date(
    values: Mapping[str, str], field: str, layout: CsvLayout, *, required: bool
) -> date | None:
    text = values.get(field)
    if not text:
        if required:
            raise Refused(MISSING_FIELD, f"{layout.columns[field]!r} ({field}) is empty")
        return None
    try:
        return parse_date(text, layout.date_format)
    except ValueError:
        raise Refused(
            BAD_DATE, f"{field} {text!r} is not a date in {layout.date_format!r}"
        ) from None


def _amount(values: Mapping[str, str], field: str, source: Source, layout: CsvLayout) -> int:
    text = values.get(field)
    if not text:
        raise Refused(MISSING_FIELD, f"{layout.columns[field]!r} ({field}) is empty")
    try:
        return minor_units(
            text,
            source.precision,
            decimal_separator=layout.decimal_separator,
            thousands_separator=layout.thousands_separator,
        )
    except AmountProblem as problem:
        raise Refused(BAD_AMOUNT, f"{field}: {problem}") from None


def _signed(amount: int, indicator: str, layout: CsvLayout) -> int:
    if amount < 0:
        raise Refused(BAD_AMOUNT, "a signed amount beside a credit/debit indicator")
    if indicator in layout.credit_values:
        return amount
    if indicator in layout.debit_values:
        return -amount
    raise Refused(BAD_INDICATOR, f"credit/debit value {indicator!r} is neither credit nor debit")


def _account(values: Mapping[str, str], source: Source) -> str:
    statement_account = values.get("account")
    if source.account is None and not statement_account:
        raise Refused(MISSING_FIELD, "the account column is empty")
    key = source.ledger_key(statement_account)
    if key is None:
        raise Refused(UNKNOWN_ACCOUNT, f"account {statement_account!r} maps to no ledger key")
    return key
