"""Reading ISO 20022 camt.053 bank-to-customer statements (`BkToCstmrStmt`).

Accepted: a `Document` in the namespace ``urn:iso:std:iso:20022:tech:xsd:camt.053.001.NN`` for
NN from 02 to 13, or in no namespace at all, written in UTF-8 (ISO 20022 messages are UTF-8).
The bytes are untrusted, so they are parsed by `defusedxml` with document type declarations
forbidden: a camt.053 has none, and a DOCTYPE is where entity bombs and external entities live.
A file that is not well-formed, not UTF-8, declares a DOCTYPE or is not a camt.053 statement is
refused whole (`malformed_file`); no input makes the parser raise.

One file may hold several `Stmt`. Each `Stmt/Ntry` is one entry, numbered 1..n in document
order across the whole file, and ends as a `StatementEntry` or an `EntryRejection` whose raw
bytes are exactly the `<Ntry>...</Ntry>` element as it appears in the file (its byte span, as
the XML parser reports it; never a re-serialisation). An entry reads:

- the ledger row: the statement's `Acct/Id/IBAN` (or `Acct/Id/Othr/Id`) through the source's
  mapping; an id mapped to no key is `unknown_account`, no id at all (and no fixed account)
  `missing_field`;
- `Sts` (``<Sts>BOOK</Sts>`` up to .07, ``<Sts><Cd>BOOK</Cd></Sts>`` from .08): only a booked
  entry is loaded. A pending, informational or future entry (PDNG, INFO, FUTR) is rejected as
  `not_booked`: it is well-formed and says something true, but it has not moved money yet; the
  bank reports it again, booked, in a later statement, and it is loaded then. Rejecting it
  (rather than skipping it) keeps every `Ntry` of the file accounted for. Any other status
  (a proprietary one) is `malformed`: nothing says whether it is booked;
- `Amt` with its `Ccy` (another currency than the source's: `currency_mismatch`), exact decimal
  text at the source's precision (`bad_amount` otherwise, or if signed: the sign is the
  indicator's), signed by `CdtDbtInd`: CRDT positive, DBIT negative (else `bad_indicator`).
  A reversal (`RvslInd`) needs nothing more: its `CdtDbtInd` already states the direction the
  money moves in;
- `BookgDt` (required) and `ValDt`, each `<Dt>` or `<DtTm>`; a date-time gives the date as
  written, in the bank's own offset (`missing_field`, `bad_date`);
- `AcctSvcrRef` (the servicer's reference); the `EndToEndId` of the entry's transactions
  (`NtryDtls/TxDtls/Refs`), the literal NOTPROVIDED ignored, several distinct ones joined by a
  space (a batch booking); the unstructured remittance lines (`TxDtls/RmtInf/Ustrd`) joined by a
  space, or else `AddtlNtryInf`, as the description.

Each statement whose account maps to a ledger row and that states a closing booked balance
(`Bal` of type CLBD) gives a `StatementBalance` of its own, numbered by the statement's place in
the file (a file may hold several statements of one account: a month of daily statements): the
closing and the opening (OPBD, or else PRCD, the previous closing), signed by their
`CdtDbtInd`, as of the closing balance's date-time (a bare date means the end of that day, UTC;
a date-time without an offset is read as UTC). A balance
that cannot be read (another currency, a bad amount, indicator or date) is left out: there is
no rejection for a balance, and a wrong one must not be compared with the ledger.

The file's `statement_id` is its message id (`GrpHdr/MsgId`), or else, for a file of one
statement, that statement's `Id`.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from xml.etree.ElementTree import Element, ParseError, TreeBuilder

from defusedxml import DTDForbidden, EntitiesForbidden, ExternalReferenceForbidden
from defusedxml.ElementTree import DefusedXMLParser

from ledger_engine.reconcile.amounts import AmountProblem, minor_units
from ledger_engine.reconcile.entries import (
    BAD_AMOUNT,
    BAD_DATE,
    BAD_INDICATOR,
    CURRENCY_MISMATCH,
    MALFORMED,
    MISSING_FIELD,
    NOT_BOOKED,
    UNKNOWN_ACCOUNT,
    EntryRejection,
    ParsedStatement,
    StatementBalance,
    StatementEntry,
    balance_moment,
    rejected_file,
)
from ledger_engine.reconcile.formats.refused import Refused
from ledger_engine.reconcile.sources import Source

NAMESPACE_PREFIX = "urn:iso:std:iso:20022:tech:xsd:camt.053.001."
VERSIONS = range(2, 14)  # camt.053.001.02 .. camt.053.001.13

_NAMESPACE = re.compile(re.escape(NAMESPACE_PREFIX) + r"(\d\d)")
# The XML declaration's encoding, read before parsing to refuse a non-UTF-8 file by name.
_DECLARED_ENCODING = re.compile(
    rb"\A(?:\xef\xbb\xbf)?<\?xml\s[^>]*?encoding\s*=\s*[\"']([^\"']*)[\"']"
)
# Byte order marks of encodings that are not UTF-8 (expat would follow them).
_OTHER_BOMS = (
    codecs.BOM_UTF32_LE,
    codecs.BOM_UTF32_BE,
    codecs.BOM_UTF16_LE,
    codecs.BOM_UTF16_BE,
)
# ISO 20022's ISODate and ISODateTime, in ASCII digits only (str's \d would take any digit).
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_DATE_TIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:[0-9]{2})?"
)
_BOOKED = "BOOK"
_NOT_BOOKED = {"PDNG": "pending", "INFO": "for information", "FUTR": "a future booking"}
_NOT_PROVIDED = "NOTPROVIDED"


def parse_camt053(raw: bytes, source: Source) -> ParsedStatement:
    """Every entry and closing balance of the camt.053 statement file `raw`, for `source`
    (see the module's docstring)."""
    assert source.format == "camt053", source
    problem = _encoding_problem(raw)
    if problem is not None:
        return rejected_file(problem, raw)
    try:
        root, spans = _parse(raw)
    except DTDForbidden:
        return rejected_file(
            "the document declares a DOCTYPE: refused unread (a camt.053 has none, and an"
            " untrusted file may not declare entities)",
            raw,
        )
    except EntitiesForbidden as wrong:
        return rejected_file(f"the document declares the entity {wrong.name!r}: refused", raw)
    except ExternalReferenceForbidden:
        return rejected_file("the document refers to an external entity: refused", raw)
    except ParseError as wrong:
        return rejected_file(f"not well-formed XML (UTF-8): {wrong}", raw)
    namespace, problem = _camt053_namespace(root)
    if problem is not None:
        return rejected_file(problem, raw)
    xml = _Names(namespace)
    report = xml.child(root, "BkToCstmrStmt")
    if report is None:
        return rejected_file("not a statement: the Document holds no BkToCstmrStmt", raw)
    statements = list(xml.children(report, "Stmt"))
    if not statements:
        return rejected_file("the BkToCstmrStmt holds no Stmt", raw)

    entries: list[StatementEntry] = []
    rejections: list[EntryRejection] = []
    balances: list[StatementBalance] = []
    position = 0
    for ordinal, statement in enumerate(statements, start=1):
        account_id = _account_id(statement, xml)
        key = source.ledger_key(account_id)
        if key is not None:
            balance = _balance(statement, key, source, xml, ordinal)
            if balance is not None:
                balances.append(balance)
        for ntry in xml.children(statement, "Ntry"):
            position += 1
            start, end = spans[ntry]
            entry_bytes = raw[start:end]
            try:
                entries.append(_entry(position, ntry, account_id, key, entry_bytes, source, xml))
            except Refused as refused:
                rejections.append(
                    EntryRejection(position, refused.reason, refused.detail, entry_bytes)
                )
    return ParsedStatement(
        _statement_id(report, statements, xml), tuple(entries), tuple(rejections), tuple(balances)
    )


# -- the document ------------------------------------------------------------------------------


def _encoding_problem(raw: bytes) -> str | None:
    """Why `raw` is not a UTF-8 document, if it says it is something else."""
    if raw.startswith(_OTHER_BOMS):
        return "the file starts with a UTF-16 or UTF-32 byte order mark; camt.053 is UTF-8"
    declared = _DECLARED_ENCODING.match(raw)
    if declared is not None and declared.group(1).lower() != b"utf-8":
        name = declared.group(1).decode("ascii", errors="replace")
        return f"the document declares encoding {name!r}; camt.053 is UTF-8"
    return None


def _parse(raw: bytes) -> tuple[Element, dict[Element, tuple[int, int]]]:
    """The document's root element, and the byte span of each of its `Ntry` elements.

    Raises `ParseError` (not well-formed, not UTF-8) or one of defusedxml's refusals."""
    target = _SpanningTreeBuilder(raw)
    # The encoding is fixed to UTF-8 (whatever the file declares, `_encoding_problem` has
    # refused the rest), and DTDs are forbidden outright: no entity is ever declared, so none
    # is expanded and none refers outside.
    parser = DefusedXMLParser(
        target=target, encoding="utf-8", forbid_dtd=True, forbid_entities=True
    )
    target.parser = parser
    parser.feed(raw)
    return parser.close(), target.spans


class _SpanningTreeBuilder:
    """An ElementTree `TreeBuilder` target that also notes where each `Ntry` element lies in
    the file's bytes: expat reports the byte offset of the tag it is handling (defusedxml's
    parser is the pure-Python `XMLParser`, whose `parser` attribute is its expat parser)."""

    def __init__(self, raw: bytes) -> None:
        self._raw = raw
        self._builder = TreeBuilder()
        self._open: list[tuple[int, bool]] = []  # (start offset, self-closing) of open Ntry
        self.spans: dict[Element, tuple[int, int]] = {}
        self.parser: DefusedXMLParser | None = None

    def _offset(self) -> int:
        assert self.parser is not None
        return self.parser.parser.CurrentByteIndex

    def start(self, tag: str, attrs: dict[str, str]) -> Element:
        element = self._builder.start(tag, attrs)
        if _local(tag) == "Ntry":
            start = self._offset()
            start_tag_end = _tag_end(self._raw, start)
            self._open.append((start, self._raw[start_tag_end - 2 : start_tag_end] == b"/>"))
        return element

    def end(self, tag: str) -> Element:
        element = self._builder.end(tag)
        if _local(tag) == "Ntry":
            start, self_closing = self._open.pop()
            if self_closing:  # <Ntry/>: its start tag is all of it
                self.spans[element] = (start, _tag_end(self._raw, start))
            else:  # expat is at the end tag's "</"
                end_tag = self._offset()
                assert self._raw.startswith(b"</", end_tag), (end_tag, self._raw[end_tag:][:20])
                self.spans[element] = (start, _tag_end(self._raw, end_tag))
        return element

    def data(self, text: str) -> None:
        self._builder.data(text)

    def close(self) -> Element:
        return self._builder.close()


def _tag_end(raw: bytes, start: int) -> int:
    """The offset just past the tag starting with "<" at `start` of a well-formed UTF-8
    document: its first ">" outside a quoted attribute value (a value may hold ">"; UTF-8
    never uses ASCII bytes inside a multi-byte character)."""
    quote = None
    for i in range(start + 1, len(raw)):
        byte = raw[i : i + 1]
        if quote is not None:
            if byte == quote:
                quote = None
        elif byte in (b'"', b"'"):
            quote = byte
        elif byte == b">":
            return i + 1
    raise AssertionError(f"no end of the tag at byte {start} of a well-formed document")


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]


def _camt053_namespace(root: Element) -> tuple[str, str | None]:
    """The root's namespace ("" for none), and why it is not a camt.053 document, if not."""
    namespace = root.tag[1:].partition("}")[0] if root.tag.startswith("{") else ""
    if _local(root.tag) != "Document":
        return namespace, f"not a camt.053 statement: the root element is {root.tag!r}"
    if namespace:
        version = _NAMESPACE.fullmatch(namespace)
        if version is None:
            return namespace, f"not a camt.053 statement: the namespace is {namespace!r}"
        if int(version.group(1)) not in VERSIONS:
            return namespace, (
                f"camt.053.001.{version.group(1)} is not a version read here"
                f" (.{VERSIONS[0]:02d} to .{VERSIONS[-1]:02d})"
            )
    return namespace, None


@dataclass(frozen=True)
class _Names:
    """Finding a camt.053 element's children by local name, in the document's namespace."""

    namespace: str

    def tag(self, name: str) -> str:
        return f"{{{self.namespace}}}{name}" if self.namespace else name

    def children(self, parent: Element, name: str) -> Iterator[Element]:
        tag = self.tag(name)
        return (child for child in parent if child.tag == tag)

    def child(self, parent: Element | None, *path: str) -> Element | None:
        """The first element at `path` below `parent` (each step its first such child)."""
        for name in path:
            if parent is None:
                return None
            parent = next(self.children(parent, name), None)
        return parent

    def text(self, parent: Element | None, *path: str) -> str | None:
        """The stripped text of the element at `path`, or `None` if absent or empty."""
        element = self.child(parent, *path)
        text = None if element is None or element.text is None else element.text.strip()
        return text or None

    def all(self, parents: list[Element], *path: str) -> list[Element]:
        """Every element at `path` below `parents`, in document order."""
        for name in path:
            parents = [child for parent in parents for child in self.children(parent, name)]
        return parents


def _statement_id(report: Element, statements: list[Element], xml: _Names) -> str | None:
    message_id = xml.text(report, "GrpHdr", "MsgId")
    if message_id is not None or len(statements) != 1:
        return message_id
    return xml.text(statements[0], "Id")


def _account_id(statement: Element, xml: _Names) -> str | None:
    return xml.text(statement, "Acct", "Id", "IBAN") or xml.text(
        statement, "Acct", "Id", "Othr", "Id"
    )


# -- entries -----------------------------------------------------------------------------------


def _entry(
    position: int,
    ntry: Element,
    account_id: str | None,
    key: str | None,
    raw: bytes,
    source: Source,
    xml: _Names,
) -> StatementEntry:
    _booked(ntry, xml)
    if key is None:
        if account_id is None:
            raise Refused(MISSING_FIELD, "the statement names no account (Acct/Id)")
        raise Refused(UNKNOWN_ACCOUNT, f"account {account_id!r} maps to no ledger key")
    amount = _signed_amount(ntry, "the entry's", source, xml)
    booking = xml.child(ntry, "BookgDt")
    if booking is None:
        raise Refused(MISSING_FIELD, "the entry has no BookgDt (booking date)")
    value = xml.child(ntry, "ValDt")
    return StatementEntry(
        position=position,
        account=key,
        amount=amount,
        booking_date=_day(booking, "BookgDt", xml),
        value_date=None if value is None else _day(value, "ValDt", xml),
        reference=_reference(ntry, xml),
        servicer_reference=xml.text(ntry, "AcctSvcrRef"),
        description=_description(ntry, xml),
        raw=raw,
    )


def _booked(ntry: Element, xml: _Names) -> None:
    """Refuses an entry that is not booked (see the module's docstring)."""
    status = xml.child(ntry, "Sts")
    if status is None:
        raise Refused(MISSING_FIELD, "the entry has no Sts (status)")
    # Up to .07 the code is Sts's own text; from .08 it is Sts/Cd (or Sts/Prtry).
    code = xml.text(status, "Cd") or (status.text or "").strip()
    if code == _BOOKED:
        return
    if code in _NOT_BOOKED:
        raise Refused(NOT_BOOKED, f"status {code} ({_NOT_BOOKED[code]}): not booked")
    proprietary = xml.text(status, "Prtry")
    if proprietary is not None:
        raise Refused(MALFORMED, f"proprietary status {proprietary!r}: not known to be booked")
    raise Refused(MALFORMED, f"status {code!r} is not a camt.053 entry status")


def _signed_amount(parent: Element, whose: str, source: Source, xml: _Names) -> int:
    """`parent`'s `Amt` in minor units, signed by its `CdtDbtInd`."""
    amount = xml.child(parent, "Amt")
    text = None if amount is None or amount.text is None else amount.text.strip()
    if amount is None or not text:
        raise Refused(MISSING_FIELD, f"{whose} Amt (amount) is absent or empty")
    currency = amount.get("Ccy")
    if not currency:
        raise Refused(MISSING_FIELD, f"{whose} Amt has no Ccy (currency)")
    if currency != source.currency:
        raise Refused(
            CURRENCY_MISMATCH, f"currency {currency!r}, the source's is {source.currency}"
        )
    if text.startswith("-"):
        raise Refused(BAD_AMOUNT, f"amount {text!r} is signed; CdtDbtInd gives the sign")
    try:
        units = minor_units(text, source.precision)
    except AmountProblem as problem:
        raise Refused(BAD_AMOUNT, f"amount: {problem}") from None
    indicator = xml.text(parent, "CdtDbtInd")
    if indicator == "CRDT":
        return units
    if indicator == "DBIT":
        return -units
    if indicator is None:
        raise Refused(MISSING_FIELD, f"{whose} CdtDbtInd (credit/debit) is absent or empty")
    raise Refused(BAD_INDICATOR, f"CdtDbtInd {indicator!r} is neither CRDT nor DBIT")


def _day(when: Element, name: str, xml: _Names) -> date:
    """The date of a `BookgDt` or `ValDt`: its `Dt`, or its `DtTm`'s date as written."""
    moment = _moment(when, name, xml)
    return moment.date() if isinstance(moment, datetime) else moment


def _moment(when: Element, name: str, xml: _Names) -> date | datetime:
    """`when`'s `Dt` as a date or its `DtTm` as a date-time (aware: UTC if it has no offset)."""
    day = xml.text(when, "Dt")
    if day is not None:
        if _DATE.fullmatch(day):
            try:
                return date.fromisoformat(day)
            except ValueError:
                pass
        raise Refused(BAD_DATE, f"{name}/Dt {day!r} is not a date (YYYY-MM-DD)")
    moment = xml.text(when, "DtTm")
    if moment is not None:
        if _DATE_TIME.fullmatch(moment):
            try:
                parsed = datetime.fromisoformat(moment)
            except ValueError:
                pass
            else:
                return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
        raise Refused(BAD_DATE, f"{name}/DtTm {moment!r} is not an ISO date-time")
    raise Refused(MISSING_FIELD, f"{name} holds neither Dt nor DtTm")


def _reference(ntry: Element, xml: _Names) -> str | None:
    ids: list[str] = []
    for refs in xml.all([ntry], "NtryDtls", "TxDtls", "Refs"):
        end_to_end = xml.text(refs, "EndToEndId")
        if end_to_end is not None and end_to_end != _NOT_PROVIDED and end_to_end not in ids:
            ids.append(end_to_end)
    return " ".join(ids) or None


def _description(ntry: Element, xml: _Names) -> str | None:
    lines = [
        line.text.strip()
        for line in xml.all([ntry], "NtryDtls", "TxDtls", "RmtInf", "Ustrd")
        if line.text is not None and line.text.strip()
    ]
    return " ".join(lines) or xml.text(ntry, "AddtlNtryInf")


# -- balances ----------------------------------------------------------------------------------


def _balance(
    statement: Element, key: str, source: Source, xml: _Names, ordinal: int
) -> StatementBalance | None:
    """The closing (and opening) booked balance of the ledger row `key` that the file's
    `ordinal`-th statement states, or `None` if it states no readable closing balance."""
    by_code: dict[str, Element] = {}
    for balance in xml.children(statement, "Bal"):
        code = xml.text(balance, "Tp", "CdOrPrtry", "Cd")
        if code is not None:
            by_code.setdefault(code, balance)  # the first of each type counts
    closing = by_code.get("CLBD")
    if closing is None:
        return None
    try:
        closing_amount = _signed_amount(closing, "the closing balance's", source, xml)
        when = xml.child(closing, "Dt")
        if when is None:
            return None
        stated = _moment(when, "Bal/Dt", xml)
        balance_moment(stated)  # OverflowError for a day that has no end: 9999-12-31
    except (Refused, OverflowError):
        return None
    opening = by_code.get("OPBD", by_code.get("PRCD"))
    try:
        opening_amount = (
            None if opening is None else _signed_amount(opening, "the opening", source, xml)
        )
    except Refused:
        opening_amount = None  # the closing balance is what is compared; keep it
    return StatementBalance(key, opening_amount, closing_amount, stated, ordinal)
