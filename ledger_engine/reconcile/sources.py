"""The sources a ledger reconciles against, declared in a versioned TOML file.

A *source* is one place statements come from: a bank account, a payment provider. Its
declaration says how to read its files and which ledger rows they speak of::

    version = 1

    [sources."Main bank"]
    format = "camt053"            # or "csv"
    table = "accounts"            # the declared table its entries reconcile against
    currency = "EUR"
    precision = 2                 # decimal places of the file's amounts (minor units)
    [sources."Main bank".accounts]  # the statement's account id -> the ledger row's key
    "DE89370400440532013000" = "acct-000001"

    [[sources."Main bank".rules]]      # matching rules, in priority order (`rules`)
    name = "same reference and amount"
    reference = { similarity = 1.0 }

    [sources.provider]
    format = "csv"
    table = "accounts"
    currency = "EUR"
    precision = 2
    account = "acct-000002"       # every entry is about this one row
    [sources.provider.csv]
    date_format = "%d.%m.%Y"
    decimal_separator = ","
    [sources.provider.csv.columns]  # field -> the file's column header
    booking_date = "Date"
    amount = "Amount"
    reference = "Reference"

A source that people may write breaks off for names the stream that posts the adjusting event
and the payload fields it fills (`ledger breaks write-off`, `ledger_engine.reconcile.resolve`)::

    [sources."Main bank".write_off]
    stream = "adjustments"        # a declared stream: account field, signed amount field
    account = "account_id"        # the payload field naming the ledger row (this default)
    amount = "amount"             # the field of the signed amount, in minor units (default)
    reference = "reference"       # optional: the field given the write-off's request id
    description = "description"   # optional: the field given the person's note

A source's `currency` and `precision` are the unit its amounts are in: where its table declares
a unit (`declare_state(..., unit="EUR/2")`), they must be that unit.

A source reconciles every movement of its accounts, whenever an account first appears in its
statements (`ledger_engine.reconcile.matching` says which movements a run considers). Where its
statements start later than the ledger (a bank account opened on a date, a provider onboarded
mid-year), `from` says where: a date (movements dated that day or later, by value date, else
the day their batch committed) or a batch id (movements of that batch and later)::

    [sources.provider]
    from = 2026-07-01             # or: from = 1200 (a batch id)

Where a source gives neither `account` nor `accounts`, the statement's account ids are the
ledger's keys themselves. Every key is checked when the file is read, and a mistake (a typo in
a key, an unknown format, a CSV layout without an amount column) raises `SourcesError` naming
the source and the key, before any statement is read.
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from pathlib import Path
from typing import Any

from ledger_engine.core.money import Unit
from ledger_engine.core.naming import label_problem, sql_identifier
from ledger_engine.errors import SourcesError
from ledger_engine.reconcile.rules import Rule, parse_rules

VERSION = 1
FORMATS = ("csv", "camt053")

# The fields a CSV layout may map to columns; the first two are required.
CSV_REQUIRED_FIELDS = ("booking_date", "amount")
CSV_OPTIONAL_FIELDS = (
    "value_date",
    "credit_debit",
    "reference",
    "servicer_reference",
    "description",
    "account",
    "currency",
    "balance",
)
_CSV_KEYS = {
    "columns",
    "delimiter",
    "date_format",
    "decimal_separator",
    "thousands_separator",
    "encoding",
    "credit_values",
    "debit_values",
}
_SOURCE_KEYS = {
    "format",
    "table",
    "currency",
    "precision",
    "account",
    "accounts",
    "csv",
    "rules",
    "write_off",
    "from",
}
_WRITE_OFF_KEYS = {"stream", "account", "amount", "reference", "description"}


@dataclass(frozen=True)
class CsvLayout:
    """How a source's CSV files are written: which column holds which field, and how."""

    columns: Mapping[str, str]
    delimiter: str = ","
    date_format: str = "%Y-%m-%d"
    decimal_separator: str = "."
    thousands_separator: str = ""
    encoding: str = "utf-8"
    # The credit/debit column's values, where amounts are unsigned and it gives the sign.
    credit_values: frozenset[str] = frozenset({"C", "CRDT", "CR", "credit"})
    debit_values: frozenset[str] = frozenset({"D", "DBIT", "DR", "debit"})


@dataclass(frozen=True)
class WriteOffStream:
    """How a write-off of a source's break posts its adjusting event: the stream, and the
    payload fields given the ledger row, the signed amount and, where named, the write-off's
    request id and the person's note."""

    stream: str
    account_field: str = "account_id"
    amount_field: str = "amount"
    reference_field: str | None = None
    description_field: str | None = None


@dataclass(frozen=True)
class Source:
    """One declared source of statements."""

    name: str
    format: str
    table: str
    currency: str
    precision: int
    account: str | None = None
    accounts: Mapping[str, str] = field(default_factory=dict)
    csv: CsvLayout | None = None
    rules: tuple[Rule, ...] = ()  # in priority order (`ledger_engine.reconcile.rules`)
    write_off: WriteOffStream | None = None  # None: its breaks cannot be written off
    # The declared start (`from`): movements of batches from `from_batch` on, dated on or
    # after `from_date` (None: any date); neither declared is batch 0, any date.
    from_batch: int = 0
    from_date: date | None = None

    @property
    def folder(self) -> str:
        """The folder of the statement inbox its files land in: a stable name derived from
        the source's label (`ledger_engine.core.naming.sql_identifier`)."""
        return sql_identifier(self.name)

    def ledger_key(self, statement_account: str | None) -> str | None:
        """The ledger row a statement's account id speaks of, or `None` if the source maps
        that id to none."""
        if self.account is not None:
            return self.account
        if not statement_account:
            return None
        if self.accounts:
            return self.accounts.get(statement_account)
        return statement_account


@dataclass(frozen=True)
class Sources:
    """The parsed declaration file: its sources by name, and the file's SHA-256 (recorded
    with every reconciliation run, so that a run says which version of the rules it used)."""

    sources: Mapping[str, Source]
    digest: str

    @property
    def units(self) -> dict[str, Unit]:
        """Each source's unit (its currency and precision), by name: what its amounts are
        shown in."""
        return {name: Unit(s.currency, s.precision) for name, s in self.sources.items()}

    def only(self, name: str) -> Sources:
        """The declaration narrowed to the source `name` (a run of that source alone);
        `SourcesError` if it declares no such source."""
        if name not in self.sources:
            declared = ", ".join(sorted(self.sources)) or "none"
            raise SourcesError(f"no source named {name!r} is declared (declared: {declared})")
        return replace(self, sources={name: self.sources[name]})


def load_sources(
    path: Path,
    tables: Mapping[str, Any] | None = None,
    streams: Mapping[str, Any] | None = None,
) -> Sources:
    """Read and check the declaration file at `path`. With `tables` (a ledger's declared
    tables), each source's table must be one of them, and its currency and precision the
    table's unit where it declares one; with `streams`, each write-off's stream."""
    raw = Path(path).read_bytes()
    try:
        document = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as wrong:
        raise SourcesError(f"{path}: not a TOML file: {wrong}") from None
    return Sources(parse_sources(document, tables, streams), hashlib.sha256(raw).hexdigest())


def parse_sources(
    document: Mapping[str, Any],
    tables: Mapping[str, Any] | None = None,
    streams: Mapping[str, Any] | None = None,
) -> dict[str, Source]:
    """The sources of a parsed TOML document (see the module's docstring)."""
    _only_keys("the file", document, {"version", "sources"})
    if document.get("version") != VERSION:
        raise SourcesError(
            f"the file must say version = {VERSION}, not {document.get('version')!r}"
        )
    declared = document.get("sources", {})
    if not isinstance(declared, Mapping):
        raise SourcesError("[sources] must be a table of sources")
    sources = {name: _source(name, body, tables, streams) for name, body in declared.items()}
    folders = [s.folder for s in sources.values()]
    if len(set(folders)) != len(folders):
        raise SourcesError("two sources' names derive the same inbox folder; rename one")
    return sources


def _source(
    name: str, body: Any, tables: Mapping[str, Any] | None, streams: Mapping[str, Any] | None
) -> Source:
    where = f"source {name!r}"
    problem = label_problem("source", name)
    if problem is not None:
        raise SourcesError(problem)
    if not isinstance(body, Mapping):
        raise SourcesError(f"{where} must be a table")
    _only_keys(where, body, _SOURCE_KEYS)
    fmt = _text(where, body, "format")
    if fmt not in FORMATS:
        raise SourcesError(f"{where}: format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    table = _text(where, body, "table")
    if tables is not None and table not in tables:
        raise SourcesError(f"{where}: the ledger declares no table {table!r}")
    precision = body.get("precision")
    if not isinstance(precision, int) or isinstance(precision, bool) or not 0 <= precision <= 18:
        raise SourcesError(f"{where}: precision must be a whole number from 0 to 18")
    currency = _text(where, body, "currency")
    if tables is not None:
        _check_unit(where, table, getattr(tables[table], "unit", None), currency, precision)
    account = body.get("account")
    if account is not None and (not isinstance(account, str) or not account):
        raise SourcesError(f"{where}: account must be a ledger key (text)")
    accounts = body.get("accounts", {})
    if not isinstance(accounts, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) and v for k, v in accounts.items()
    ):
        raise SourcesError(f"{where}: accounts must map statement account ids to ledger keys")
    if account is not None and accounts:
        raise SourcesError(f"{where}: give account or accounts, not both")
    csv = body.get("csv")
    if (csv is None) != (fmt != "csv"):
        raise SourcesError(f"{where}: a [csv] layout goes with format = 'csv', and only there")
    layout = None if csv is None else _csv_layout(f"{where} [csv]", csv)
    if layout is not None and account is None and "account" not in layout.columns:
        raise SourcesError(f"{where}: without a fixed account, [csv] columns must name account")
    from_batch, from_date = _start(where, body.get("from"))
    return Source(
        name=name,
        format=fmt,
        table=table,
        currency=currency,
        precision=precision,
        account=account,
        accounts=dict(accounts),
        csv=layout,
        rules=parse_rules(where, body.get("rules", [])),
        write_off=_write_off(f"{where} [write_off]", body.get("write_off"), streams),
        from_batch=from_batch,
        from_date=from_date,
    )


def _start(where: str, value: Any) -> tuple[int, date | None]:
    """The start `from` declares: (first batch, first date)."""
    if value is None:
        return 0, None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value, None
    if isinstance(value, date) and not isinstance(value, datetime):
        return 0, value
    raise SourcesError(
        f"{where}: from must be a date (from = 2026-07-01) or a batch id (a whole number, "
        f"0 or more), not {value!r}"
    )


def _check_unit(where: str, table: str, unit: Unit | None, currency: str, precision: int) -> None:
    """A source's amounts are the table's: where the table declares its unit
    (`ledger_engine.core.money`), the source's currency and precision must be that unit, or
    every amount matched, every break and every stated balance would read in another."""
    if unit is not None and (currency, precision) != (unit.code, unit.precision):
        raise SourcesError(
            f"{where}: currency {currency!r} with precision {precision} is not the unit of "
            f"table {table!r}, which declares {unit} (currency {unit.code!r}, precision "
            f"{unit.precision}): its statements must be in the table's unit"
        )


def _write_off(where: str, body: Any, streams: Mapping[str, Any] | None) -> WriteOffStream | None:
    if body is None:
        return None
    if not isinstance(body, Mapping):
        raise SourcesError(f"{where} must be a table")
    _only_keys(where, body, _WRITE_OFF_KEYS)
    stream = _text(where, body, "stream")
    if streams is not None and stream not in streams:
        raise SourcesError(f"{where}: the ledger declares no stream {stream!r}")
    fields = {key: _text(where, body, key) for key in _WRITE_OFF_KEYS - {"stream"} if key in body}
    if len(set(fields.values())) != len(fields):
        raise SourcesError(f"{where}: each payload field may be named once")
    return WriteOffStream(
        stream,
        account_field=fields.get("account", "account_id"),
        amount_field=fields.get("amount", "amount"),
        reference_field=fields.get("reference"),
        description_field=fields.get("description"),
    )


def _csv_layout(where: str, body: Any) -> CsvLayout:
    if not isinstance(body, Mapping):
        raise SourcesError(f"{where} must be a table")
    _only_keys(where, body, _CSV_KEYS)
    columns = body.get("columns")
    if not isinstance(columns, Mapping):
        raise SourcesError(f"{where}: columns must map fields to column headers")
    _only_keys(f"{where} columns", columns, set(CSV_REQUIRED_FIELDS + CSV_OPTIONAL_FIELDS))
    for required in CSV_REQUIRED_FIELDS:
        if required not in columns:
            raise SourcesError(f"{where}: columns must name the {required} column")
    if not all(isinstance(v, str) and v for v in columns.values()):
        raise SourcesError(f"{where}: every column header must be non-empty text")
    texts = {
        key: _text(where, body, key)
        for key in ("delimiter", "date_format", "decimal_separator", "encoding")
        if key in body
    }
    if "thousands_separator" in body:
        texts["thousands_separator"] = _text(where, body, "thousands_separator", empty_ok=True)
    if len(texts.get("delimiter", ",")) != 1:
        raise SourcesError(f"{where}: delimiter must be one character")
    if texts.get("decimal_separator", ".") not in (".", ","):
        raise SourcesError(f"{where}: decimal_separator must be '.' or ','")
    if texts.get("decimal_separator", ".") == texts.get("thousands_separator", ""):
        raise SourcesError(f"{where}: the decimal and thousands separators must differ")
    values = {
        key: frozenset(_texts(where, body, key))
        for key in ("credit_values", "debit_values")
        if key in body
    }
    layout = CsvLayout(columns=dict(columns), **texts, **values)
    if layout.credit_values & layout.debit_values:
        raise SourcesError(f"{where}: a value cannot mean both credit and debit")
    return layout


def _only_keys(where: str, body: Mapping[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise SourcesError(
            f"{where}: unknown key(s) {', '.join(map(repr, unknown))};"
            f" known: {', '.join(sorted(allowed))}"
        )


def _text(where: str, body: Mapping[str, Any], key: str, *, empty_ok: bool = False) -> str:
    value = body.get(key)
    if not isinstance(value, str) or (not value and not empty_ok):
        raise SourcesError(f"{where}: {key} must be non-empty text")
    return value


def _texts(where: str, body: Mapping[str, Any], key: str) -> list[str]:
    value = body.get(key)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise SourcesError(f"{where}: {key} must be a list of text values")
    return value
