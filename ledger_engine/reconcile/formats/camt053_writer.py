"""Writing ISO 20022 camt.053.001.08 bank-to-customer statements (`BkToCstmrStmt`).

What a bank would send for one or more accounts: a group header (`GrpHdr/MsgId`, `CreDtTm`),
then one `Stmt` per account with its id, the account (`Acct/Id/IBAN` for an IBAN, else
`Acct/Id/Othr/Id`), the opening (OPBD) and closing (CLBD) booked balances with their dates,
and one booked `Ntry` per entry: `Amt` with its `Ccy` as exact decimal text at the source's
precision, `CdtDbtInd` (a credit positive, a debit negative in minor units), `Sts/Cd` BOOK,
`BookgDt/Dt`, `ValDt/Dt`, `AcctSvcrRef`, a bank transaction code, and the entry's
`NtryDtls/TxDtls` with `Refs/EndToEndId` and `RmtInf/Ustrd`. Elements come in the schema's
order; the document is UTF-8, its texts escaped.

The promise is the round trip: `parse_camt053` reads a written document back to exactly the
entries and balances written. So the writer refuses (`ValueError`, naming the field) what the
reader would read otherwise rather than altering it: a text that is empty, starts or ends with
white space (the reader strips it), holds a character XML 1.0 cannot carry, or a reference
that is the literal ``NOTPROVIDED`` (the reader ignores it). A carriage return inside a text is
written as ``&#13;`` (an XML parser turns a literal one into a line feed).

ISO 20022's length limits (35 characters for an `EndToEndId`, 140 per `Ustrd` line) are not
enforced: this project's reader takes any length, and the ledger's references and descriptions
are free text that the round trip must keep whole.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from xml.sax.saxutils import escape, quoteattr

from ledger_engine.core.records import INT64_MAX, INT64_MIN

NAMESPACE = "urn:iso:std:iso:20022:tech:xsd:camt.053.001.08"
NOT_PROVIDED = "NOTPROVIDED"

# Characters XML 1.0 cannot carry at all, even as character references.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_CURRENCY = re.compile("[A-Z]{3}")
# An IBAN's shape: country, check digits, up to 30 letters and digits (ISO 13616).
_IBAN = re.compile("[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}")


@dataclass(frozen=True)
class CamtEntry:
    """One booked entry: `amount` in signed minor units (the sign becomes `CdtDbtInd`)."""

    amount: int
    booking_date: date
    value_date: date | None = None
    reference: str | None = None  # NtryDtls/TxDtls/Refs/EndToEndId
    servicer_reference: str | None = None  # AcctSvcrRef
    description: str | None = None  # NtryDtls/TxDtls/RmtInf/Ustrd


@dataclass(frozen=True)
class CamtStatement:
    """One account's statement: its entries between the opening and the closing balance.

    `closing` defaults to `opening` plus the entries' amounts, as a bank's would be; a date-time
    `closing_date` is written as `DtTm` (it must carry its offset), a date as `Dt`. `iban` says
    whether `account_id` is written as an IBAN (`None`: when it has an IBAN's form and check
    digits)."""

    account_id: str
    statement_id: str
    currency: str
    opening: int
    opening_date: date
    closing_date: date | datetime
    entries: Sequence[CamtEntry] = ()
    closing: int | None = None
    iban: bool | None = None

    @property
    def closing_balance(self) -> int:
        """The closing balance written: the given one, else opening plus the entries."""
        if self.closing is not None:
            return self.closing
        return self.opening + sum(e.amount for e in self.entries)


def write_camt053(
    statements: Sequence[CamtStatement], *, message_id: str, created: datetime, precision: int
) -> bytes:
    """A camt.053.001.08 document holding `statements`, amounts at `precision` decimal places
    (the source's), as UTF-8 bytes. Raises `ValueError` for anything that would not read back
    as written (see the module's docstring)."""
    if not 0 <= precision <= 18:
        raise ValueError(f"precision must be from 0 to 18, not {precision}")
    if not statements:
        raise ValueError("a camt.053 document holds at least one statement")
    _text("GrpHdr/MsgId", message_id)
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<Document xmlns="{NAMESPACE}">',
        "  <BkToCstmrStmt>",
        "    <GrpHdr>",
        f"      {_leaf('MsgId', message_id)}",
        f"      {_leaf('CreDtTm', _date_time('GrpHdr/CreDtTm', created))}",
        "    </GrpHdr>",
    ]
    for statement in statements:
        lines += _statement(statement, created, precision)
    lines += ["  </BkToCstmrStmt>", "</Document>"]
    return ("\n".join(lines) + "\n").encode("utf-8")


def text_problem(text: str) -> str | None:
    """Why `text` cannot be written as an element's text and read back unchanged, or `None`."""
    if not text:
        return "is empty"
    if text != text.strip():
        return "starts or ends with white space"
    bad = _NOT_XML.search(text)
    if bad is not None:
        return f"holds {bad.group()!r}, which XML cannot carry"
    return None


def is_iban(account_id: str) -> bool:
    """Whether `account_id` is an IBAN: its form and its mod-97 check digits (ISO 13616)."""
    if not _IBAN.fullmatch(account_id):
        return False
    rearranged = account_id[4:] + account_id[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


def decimal_text(units: int, precision: int) -> str:
    """Non-negative minor `units` as decimal text at `precision`: 12345 at 2 is ``123.45``."""
    assert units >= 0, units
    if precision == 0:
        return str(units)
    whole, fraction = divmod(units, 10**precision)
    return f"{whole}.{fraction:0{precision}d}"


# -- pieces ------------------------------------------------------------------------------------


def _statement(statement: CamtStatement, created: datetime, precision: int) -> list[str]:
    where = f"statement {statement.statement_id!r}"
    _text(f"{where} Id", statement.statement_id)
    _text(f"{where} account id", statement.account_id)
    if not _CURRENCY.fullmatch(statement.currency):
        raise ValueError(f"{where}: currency {statement.currency!r} is not an ISO 4217 code")
    iban = is_iban(statement.account_id) if statement.iban is None else statement.iban
    account_id = (
        _leaf("IBAN", statement.account_id)
        if iban
        else f"<Othr>{_leaf('Id', statement.account_id)}</Othr>"
    )
    ccy = statement.currency
    closing_date = statement.closing_date
    if isinstance(closing_date, datetime):
        closing_when = _leaf("DtTm", _date_time(f"{where} closing date", closing_date))
    elif closing_date == date.max:
        # A bare date is read as the end of that day, which for the last date is no moment.
        raise ValueError(f"{where}: a closing balance dated {date.max} cannot be read back")
    else:
        closing_when = _leaf("Dt", closing_date.isoformat())
    lines = [
        "    <Stmt>",
        f"      {_leaf('Id', statement.statement_id)}",
        f"      {_leaf('CreDtTm', _date_time('CreDtTm', created))}",
        f"      <Acct><Id>{account_id}</Id>{_leaf('Ccy', ccy)}</Acct>",
        *_balance(
            "OPBD",
            statement.opening,
            ccy,
            _leaf("Dt", statement.opening_date.isoformat()),
            precision,
            f"{where} opening balance",
        ),
        *_balance(
            "CLBD",
            statement.closing_balance,
            ccy,
            closing_when,
            precision,
            f"{where} closing balance",
        ),
    ]
    for n, entry in enumerate(statement.entries, start=1):
        lines += _entry(entry, ccy, precision, f"{where} entry {n}")
    lines.append("    </Stmt>")
    return lines


def _balance(code: str, units: int, ccy: str, when: str, precision: int, where: str) -> list[str]:
    return [
        "      <Bal>",
        f"        <Tp><CdOrPrtry>{_leaf('Cd', code)}</CdOrPrtry></Tp>",
        *(f"        {line}" for line in _amount(units, ccy, precision, where)),
        f"        <Dt>{when}</Dt>",
        "      </Bal>",
    ]


def _entry(entry: CamtEntry, ccy: str, precision: int, where: str) -> list[str]:
    lines = [*_amount(entry.amount, ccy, precision, where), "<Sts><Cd>BOOK</Cd></Sts>"]
    lines.append(f"<BookgDt>{_leaf('Dt', entry.booking_date.isoformat())}</BookgDt>")
    if entry.value_date is not None:
        lines.append(f"<ValDt>{_leaf('Dt', entry.value_date.isoformat())}</ValDt>")
    if entry.servicer_reference is not None:
        _text(f"{where} AcctSvcrRef", entry.servicer_reference)
        lines.append(_leaf("AcctSvcrRef", entry.servicer_reference))
    # The bank transaction code is required from .08 on: a SEPA credit transfer, received for
    # a credit and issued for a debit.
    family = "RCDT" if entry.amount >= 0 else "ICDT"
    lines.append(
        "<BkTxCd><Domn><Cd>PMNT</Cd>"
        f"<Fmly><Cd>{family}</Cd><SubFmlyCd>ESCT</SubFmlyCd></Fmly></Domn></BkTxCd>"
    )
    details = []
    if entry.reference is not None:
        _text(f"{where} EndToEndId", entry.reference)
        if entry.reference == NOT_PROVIDED:
            raise ValueError(f"{where}: EndToEndId {NOT_PROVIDED} reads as no reference")
        details.append(f"<Refs>{_leaf('EndToEndId', entry.reference)}</Refs>")
    if entry.description is not None:
        _text(f"{where} Ustrd", entry.description)
        details.append(f"<RmtInf>{_leaf('Ustrd', entry.description)}</RmtInf>")
    if details:
        lines += ["<NtryDtls>", "  <TxDtls>", *(f"    {d}" for d in details), "  </TxDtls>"]
        lines.append("</NtryDtls>")
    return ["      <Ntry>", *(f"        {line}" for line in lines), "      </Ntry>"]


def _amount(units: int, ccy: str, precision: int, where: str) -> list[str]:
    if not INT64_MIN <= units <= INT64_MAX:
        raise ValueError(f"{where}: {units} minor units is beyond int64")
    if units == INT64_MIN:
        # Its magnitude is beyond int64, which the reader scales before applying the sign.
        raise ValueError(f"{where}: {units} minor units cannot be read back")
    text = decimal_text(abs(units), precision)
    return [
        f"<Amt Ccy={quoteattr(ccy)}>{text}</Amt>",
        _leaf("CdtDbtInd", "CRDT" if units >= 0 else "DBIT"),
    ]


def _date_time(where: str, moment: datetime) -> str:
    offset = moment.utcoffset()
    if offset is None:
        raise ValueError(f"{where}: a date-time must carry its offset")
    if offset.seconds % 60 or offset.microseconds:
        raise ValueError(f"{where}: ISO 20022 offsets are whole minutes")
    return moment.isoformat()


def _text(where: str, text: str) -> None:
    problem = text_problem(text)
    if problem is not None:
        raise ValueError(f"{where}: {text!r} {problem}")


def _leaf(name: str, text: str) -> str:
    # A literal carriage return would be read as a line feed (XML's end-of-line handling).
    return f"<{name}>{escape(text, {chr(13): '&#13;'})}</{name}>"
