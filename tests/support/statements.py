"""Building ISO 20022 camt.053 bank-to-customer statement files for the tests.

A test says what a statement holds, in the ledger's terms, and `camt053_document` writes the
XML a bank would send::

    camt053_document([
        Statement("DE89370400440532013000", opening=10_000, closing=22_345, entries=[
            Entry(12_345, reference="E2E-1", remittance=("invoice 7",)),
            Entry(-2_000, booking_date=date(2026, 11, 3)),
        ]),
    ])

Amounts are signed integer minor units (a credit positive, a debit negative) and are written
as decimal text at `precision` with a CRDT/DBIT indicator, the way camt.053 states them. The
elements come in the schema's order, in camt.053.001.08 unless told another version (from .08
an entry's status is ``<Sts><Cd>BOOK</Cd></Sts>``, before it ``<Sts>BOOK</Sts>``).

Nothing is checked: a field may hold any text (`amount_text="1.005"`, `indicator="XXXX"`,
`booking_date="2026-02-30"`, `currency="USD"`), and `None` leaves an optional element out, so
that a test can write what a bank may send and see it refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from xml.sax.saxutils import escape, quoteattr

# One formatting of minor units as decimal text, the product writer's: exported from here too,
# for the tests that build documents by hand.
from ledger_engine.reconcile.formats.camt053_writer import decimal_text

# When a statement's dates are not given: a day in the project's test calendar.
DAY = date(2026, 11, 2)
IBAN = "DE89370400440532013000"

When = date | datetime | str | None


@dataclass(frozen=True)
class Entry:
    """One `<Ntry>`: `amount` in signed minor units (the sign becomes the CdtDbtInd)."""

    amount: int
    booking_date: When = DAY
    value_date: When = None
    reference: str | None = None  # NtryDtls/TxDtls/Refs/EndToEndId
    servicer_reference: str | None = None  # AcctSvcrRef
    remittance: Sequence[str] = ()  # NtryDtls/TxDtls/RmtInf/Ustrd, one element per line
    additional_info: str | None = None  # AddtlNtryInf
    status: str = "BOOK"  # BOOK, PDNG, INFO, ...
    currency: str | None = None  # Amt/@Ccy; the statement's currency unless given
    indicator: str | None = None  # CdtDbtInd as written; from the amount's sign unless given
    amount_text: str | None = None  # Amt's text as written; from `amount` unless given


@dataclass(frozen=True)
class Statement:
    """One `<Stmt>` of the account `account` (an IBAN, or an `Othr/Id` with `iban=False`)."""

    account: str | None = IBAN
    entries: Sequence[Entry] = ()
    opening: int | None = None  # OPBD, dated `opening_date`
    closing: int | None = None  # CLBD, dated `closing_date`
    opening_date: When = DAY
    closing_date: When = DAY
    currency: str = "EUR"
    statement_id: str = "STMT-1"
    iban: bool = True
    extra_balances: Sequence[tuple[str, int, When]] = field(default=())  # (type code, amount, at)


def camt053_document(
    statements: Sequence[Statement],
    *,
    version: int | None = 8,
    precision: int = 2,
    message_id: str | None = "MSG-1",
    prefix: str | None = None,
) -> bytes:
    """A camt.053 file in UTF-8 holding `statements`.

    `version` picks the namespace ``urn:iso:std:iso:20022:tech:xsd:camt.053.001.NN`` (`None`:
    a document in no namespace); `prefix` writes every element qualified (``<p:Ntry>``)
    instead of in the default namespace; `message_id` is `GrpHdr/MsgId` (`None` leaves the
    group header out)."""
    writer = _Writer(prefix, version is None or version >= 8, precision)
    if version is None:
        declaration = ""
    else:
        name = "xmlns" if prefix is None else f"xmlns:{prefix}"
        declaration = f' {name}="urn:iso:std:iso:20022:tech:xsd:camt.053.001.{version:02d}"'
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', f"<{writer.tag('Document')}{declaration}>"]
    lines.append(f"  <{writer.tag('BkToCstmrStmt')}>")
    if message_id is not None:
        lines += writer.element(
            "GrpHdr", [writer.leaf("MsgId", message_id), writer.leaf("CreDtTm", _CREATED)], 2
        )
    for statement in statements:
        lines += writer.statement(statement)
    lines.append(f"  </{writer.tag('BkToCstmrStmt')}>")
    lines.append(f"</{writer.tag('Document')}>")
    return ("\n".join(lines) + "\n").encode("utf-8")


_CREATED = "2026-11-02T18:00:00+01:00"


@dataclass(frozen=True)
class _Writer:
    prefix: str | None
    status_as_code: bool  # from camt.053.001.08 on, Sts holds a Cd
    precision: int

    def tag(self, name: str) -> str:
        return name if self.prefix is None else f"{self.prefix}:{name}"

    def leaf(self, name: str, text: str, attributes: str = "") -> str:
        return f"<{self.tag(name)}{attributes}>{escape(text)}</{self.tag(name)}>"

    def element(self, name: str, children: list[str], depth: int) -> list[str]:
        """`name` holding `children` (each a line already written), indented at `depth`."""
        pad = "  " * depth
        inner = [line if line.startswith(" ") else f"{pad}  {line}" for line in children]
        return [f"{pad}<{self.tag(name)}>", *inner, f"{pad}</{self.tag(name)}>"]

    def nested(self, path: Sequence[str], leaf: str) -> str:
        """`leaf` wrapped in the elements of `path`, on one line."""
        opened = "".join(f"<{self.tag(name)}>" for name in path)
        closed = "".join(f"</{self.tag(name)}>" for name in reversed(path))
        return f"{opened}{leaf}{closed}"

    def when(self, name: str, when: When) -> str:
        """`<name><Dt>` for a date or text, `<name><DtTm>` for a date-time."""
        if isinstance(when, datetime):
            return self.nested([name], self.leaf("DtTm", when.isoformat()))
        text = when if isinstance(when, str) else when.isoformat()  # type: ignore[union-attr]
        return self.nested([name], self.leaf("Dt", text))

    def amount(
        self, units: int, currency: str, text: str | None, indicator: str | None
    ) -> list[str]:
        written = decimal_text(abs(units), self.precision) if text is None else text
        sign = ("CRDT" if units >= 0 else "DBIT") if indicator is None else indicator
        return [
            self.leaf("Amt", written, f" Ccy={quoteattr(currency)}"),
            self.leaf("CdtDbtInd", sign),
        ]

    def balance(self, code: str, units: int, currency: str, when: When) -> list[str]:
        children = [self.nested(["Tp", "CdOrPrtry"], self.leaf("Cd", code))]
        children += self.amount(units, currency, None, None)
        if when is not None:
            children.append(self.when("Dt", when))
        return self.element("Bal", children, 3)

    def statement(self, statement: Statement) -> list[str]:
        children = [self.leaf("Id", statement.statement_id), self.leaf("CreDtTm", _CREATED)]
        if statement.account is not None:
            account = self.leaf("IBAN", statement.account)
            if not statement.iban:
                account = self.nested(["Othr"], self.leaf("Id", statement.account))
            children.append(
                self.nested(
                    ["Acct"], self.nested(["Id"], account) + self.leaf("Ccy", statement.currency)
                )
            )
        balances = [("OPBD", statement.opening, statement.opening_date)]
        balances.append(("CLBD", statement.closing, statement.closing_date))
        for code, units, when in [*balances, *statement.extra_balances]:
            if units is not None:
                children += self.balance(code, units, statement.currency, when)
        for entry in statement.entries:
            children += self.entry(entry, statement.currency)
        return self.element("Stmt", children, 2)

    def entry(self, entry: Entry, currency: str) -> list[str]:
        children = self.amount(
            entry.amount, entry.currency or currency, entry.amount_text, entry.indicator
        )
        status = self.leaf("Cd", entry.status) if self.status_as_code else escape(entry.status)
        children.append(f"<{self.tag('Sts')}>{status}</{self.tag('Sts')}>")
        if entry.booking_date is not None:
            children.append(self.when("BookgDt", entry.booking_date))
        if entry.value_date is not None:
            children.append(self.when("ValDt", entry.value_date))
        if entry.servicer_reference is not None:
            children.append(self.leaf("AcctSvcrRef", entry.servicer_reference))
        # The bank transaction code is required from .08; any code will do here.
        family = self.nested(["Fmly"], self.leaf("Cd", "RCDT") + self.leaf("SubFmlyCd", "ESCT"))
        children.append(self.nested(["BkTxCd", "Domn"], self.leaf("Cd", "PMNT") + family))
        details = []
        if entry.reference is not None:
            details.append(self.nested(["Refs"], self.leaf("EndToEndId", entry.reference)))
        if entry.remittance:
            lines = "".join(self.leaf("Ustrd", line) for line in entry.remittance)
            details.append(self.nested(["RmtInf"], lines))
        if details:
            children += self.element("NtryDtls", self.element("TxDtls", details, 5), 4)
        if entry.additional_info is not None:
            children.append(self.leaf("AddtlNtryInf", entry.additional_info))
        return self.element("Ntry", children, 3)
