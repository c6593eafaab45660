"""The declaration of statement sources: read from a versioned TOML file and checked at load,
with a message naming the source and the key for every mistake."""

from __future__ import annotations

import hashlib
import tomllib
from datetime import date, datetime
from pathlib import Path

import pytest

from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.errors import SourcesError
from ledger_engine.reconcile.sources import Source, load_sources, parse_sources
from tests.support.apps.simple_trade import build_ledger as build_simple_trade

DECLARATION = """
version = 1

[sources."Main bank"]
format = "camt053"
table = "accounts"
currency = "EUR"
precision = 2
[sources."Main bank".accounts]
"DE89370400440532013000" = "acct-000001"

[sources.provider]
format = "csv"
table = "accounts"
currency = "EUR"
precision = 2
account = "acct-000002"
[sources.provider.csv]
date_format = "%d.%m.%Y"
decimal_separator = ","
thousands_separator = "."
[sources.provider.csv.columns]
booking_date = "Date"
amount = "Amount"
reference = "Reference"
"""


def _csv_source(**changes) -> dict:
    source = {
        "format": "csv",
        "table": "accounts",
        "currency": "EUR",
        "precision": 2,
        "account": "acct-1",
        "csv": {"columns": {"booking_date": "Date", "amount": "Amount"}},
    }
    return {"version": 1, "sources": {"s": source | changes}}


def test_a_declaration_file_gives_each_source_with_its_digest(tmp_path: Path):
    path = tmp_path / "reconciliation.toml"
    path.write_text(DECLARATION, encoding="utf-8")

    declared = load_sources(path, tables={"accounts": object()})

    assert declared.digest == hashlib.sha256(path.read_bytes()).hexdigest()
    bank, provider = declared.sources["Main bank"], declared.sources["provider"]
    assert (bank.format, bank.table, bank.currency, bank.precision) == (
        "camt053",
        "accounts",
        "EUR",
        2,
    )
    assert bank.ledger_key("DE89370400440532013000") == "acct-000001"
    assert bank.ledger_key("DE00000000000000000000") is None
    assert provider.ledger_key(None) == "acct-000002"
    assert provider.csv is not None and provider.csv.decimal_separator == ","
    assert provider.csv.columns["reference"] == "Reference"


def test_a_declaration_narrowed_to_one_source_keeps_it_and_its_digest(tmp_path: Path):
    path = tmp_path / "reconciliation.toml"
    path.write_text(DECLARATION, encoding="utf-8")
    declared = load_sources(path, tables={"accounts": object()})

    narrowed = declared.only("provider")

    assert dict(narrowed.sources) == {"provider": declared.sources["provider"]}
    assert narrowed.digest == declared.digest, "a run of one source says which file it read"
    with pytest.raises(SourcesError, match=r"no source named 'bank' is declared \(declared: "):
        declared.only("bank")


def test_a_source_without_a_mapping_reads_statement_accounts_as_ledger_keys():
    source = Source("s", "camt053", "accounts", "EUR", 2)
    assert source.ledger_key("acct-7") == "acct-7"
    assert source.ledger_key("") is None


def test_a_source_may_declare_where_its_movements_start():
    document = tomllib.loads(
        DECLARATION.replace(
            'precision = 2\naccount = "acct-000002"',
            'precision = 2\nfrom = 1200\naccount = "acct-000002"',
        ).replace(
            '[sources."Main bank".accounts]', 'from = 2026-07-01\n[sources."Main bank".accounts]'
        )
    )

    sources = parse_sources(document)

    bank, provider = sources["Main bank"], sources["provider"]
    assert (bank.from_batch, bank.from_date) == (0, date(2026, 7, 1))
    assert (provider.from_batch, provider.from_date) == (1200, None)
    undeclared = Source("s", "camt053", "accounts", "EUR", 2)
    assert (undeclared.from_batch, undeclared.from_date) == (0, None)


@pytest.mark.parametrize(
    "start",
    [-1, True, "2026-07-01", 12.0, datetime(2026, 7, 1, 8, 0), {"batch": 3}],
    ids=["negative batch", "boolean", "text", "float", "date and time", "table"],
)
def test_a_start_that_is_neither_a_date_nor_a_batch_is_refused(start):
    with pytest.raises(
        SourcesError, match=r"source 's': from must be a date \(from = 2026-07-01\) or a batch id"
    ):
        parse_sources(_csv_source(**{"from": start}))


def test_a_source_name_is_a_label_and_its_inbox_folder_is_derived():
    document = {"version": 1, "sources": {"Bank «Nord» 'EUR'": _csv_source()["sources"]["s"]}}
    (source,) = parse_sources(document).values()
    assert source.name == "Bank «Nord» 'EUR'"
    assert source.folder.startswith("bank_nord_eur_") and source.folder.isascii()


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"version": 2, "sources": {}}, r"version = 1, not 2"),
        ({"sources": {}}, r"version = 1, not None"),
        ({"version": 1, "source": {}}, r"unknown key\(s\) 'source'"),
        (_csv_source(format="xlsx"), r"source 's': format must be one of csv, camt053"),
        (_csv_source(table="acounts"), r"source 's': the ledger declares no table 'acounts'"),
        (_csv_source(precision=2.0), r"precision must be a whole number"),
        (_csv_source(precision=19), r"precision must be a whole number from 0 to 18"),
        (_csv_source(currency=""), r"currency must be non-empty text"),
        (_csv_source(accounts={"x": "y"}), r"give account or accounts, not both"),
        (_csv_source(ammount=1), r"unknown key\(s\) 'ammount'"),
        (_csv_source(csv=None), r"a \[csv\] layout goes with format = 'csv'"),
        (_csv_source(csv={"columns": {"amount": "A"}}), r"must name the booking_date column"),
        (
            _csv_source(csv={"columns": {"booking_date": "D", "amount": "A", "amnt": "B"}}),
            r"\[csv\] columns: unknown key\(s\) 'amnt'",
        ),
        (
            _csv_source(account=None),
            r"without a fixed account, \[csv\] columns must name account",
        ),
        (
            _csv_source(
                csv={
                    "columns": {"booking_date": "D", "amount": "A"},
                    "decimal_separator": ",",
                    "thousands_separator": ",",
                }
            ),
            r"separators must differ",
        ),
        (
            _csv_source(
                csv={
                    "columns": {"booking_date": "D", "amount": "A"},
                    "credit_values": ["C"],
                    "debit_values": ["C", "D"],
                }
            ),
            r"cannot mean both credit and debit",
        ),
    ],
)
def test_a_mistake_in_the_declaration_is_refused_naming_it(document, message):
    with pytest.raises(SourcesError, match=message):
        parse_sources(document, tables={"accounts": object()})


def test_a_file_that_is_not_toml_is_refused(tmp_path: Path):
    path = tmp_path / "reconciliation.toml"
    path.write_text("version = = 1", encoding="utf-8")
    with pytest.raises(SourcesError, match=r"not a TOML file"):
        load_sources(path)


RULES = """
version = 1
[sources.bank]
format = "camt053"
table = "accounts"
currency = "EUR"
precision = 2

[[sources.bank.rules]]
name = "exact"
reference = { similarity = 1.0 }

[[sources.bank.rules]]
name = "fuzzy"
description = { similarity = 0.8 }
amount = { tolerance = 50, relative = 0.001 }
date = { window_days = 3 }

[[sources.bank.rules]]
name = "payout"
strategy = "one_to_many"
group_by = "reference"
date = { window_days = 5 }
"""


def test_a_sources_rules_are_read_in_priority_order(tmp_path: Path):
    path = tmp_path / "reconciliation.toml"
    path.write_text(RULES, encoding="utf-8")
    exact, fuzzy, payout = load_sources(path).sources["bank"].rules
    assert [r.priority for r in (exact, fuzzy, payout)] == [0, 1, 2]
    assert (exact.reference_similarity, exact.window_days, exact.amount.allowed(10**6)) == (
        1.0,
        None,
        0,
    )
    assert fuzzy.amount.allowed(10_000) == 50 and fuzzy.amount.allowed(200_000) == 200
    assert (fuzzy.description_similarity, fuzzy.window_days) == (0.8, 3)
    assert (payout.strategy, payout.group_by, payout.window_days) == ("one_to_many", "reference", 5)


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"name": ""}, r"name must be non-empty text"),
        ({"name": "r", "strategy": "fuzzy"}, r"strategy must be one of"),
        ({"name": "r", "group_by": "reference"}, r"group_by goes with a grouped strategy"),
        ({"name": "r", "strategy": "one_to_many"}, r"group_by goes with a grouped strategy"),
        ({"name": "r", "strategy": "many_to_one", "group_by": "amount"}, r"group_by must be"),
        ({"name": "r", "amount": {"tolerance": -1}}, r"tolerance must be a whole number"),
        ({"name": "r", "amount": {"relative": 2}}, r"relative must be a number from 0 to 1"),
        ({"name": "r", "date": {"days": 2}}, r"date takes window_days"),
        ({"name": "r", "reference": {"similarity": 0}}, r"similarity must be a number above 0"),
        ({"name": "r", "memo": {"similarity": 1}}, r"unknown key\(s\) 'memo'"),
    ],
)
def test_a_mistake_in_a_rule_is_refused_naming_the_rule(rule, message):
    document = _csv_source(rules=[rule])
    with pytest.raises(SourcesError, match=rf"source 's' rule 1.*{message}"):
        parse_sources(document)


def test_two_rules_of_a_source_may_not_share_a_name():
    with pytest.raises(SourcesError, match=r"two rules share a name"):
        parse_sources(_csv_source(rules=[{"name": "r"}, {"name": "r"}]))


def test_the_banks_declared_rules_are_those_its_demo_statements_are_generated_for():
    from ledger_engine.apps.bank.ledger import build_ledger
    from ledger_engine.config import PROJECT_ROOT
    from ledger_engine.reconcile.rules import default_rules

    ledger = build_ledger()
    path = PROJECT_ROOT / "expectations" / "bank" / "reconciliation.toml"
    (source,) = load_sources(path, ledger.tables).sources.values()
    assert (source.name, source.format, source.table) == ("Main bank", "camt053", "accounts")
    assert source.rules == default_rules()


# --- The source's unit is its table's ------------------------------------------------------


@pytest.mark.parametrize(
    ("currency", "precision"), [("USD", 2), ("EUR", 3), ("EUR", 0), ("eur", 2)]
)
def test_a_source_in_another_unit_than_its_table_declares_is_refused(currency, precision):
    document = _csv_source(currency=currency, precision=precision)
    with pytest.raises(
        SourcesError,
        match=rf"source 's': currency '{currency}' with precision {precision} is not the unit"
        r" of table 'accounts', which declares EUR/2",
    ):
        parse_sources(document, tables=build_ledger().tables)


def test_a_source_in_its_tables_unit_or_against_a_table_without_one_is_taken():
    (source,) = parse_sources(_csv_source(), tables=build_ledger().tables).values()
    assert (source.currency, source.precision) == ("EUR", 2)
    # The simple trade example's accounts hold plain integers: any unit of a source is its own.
    document = _csv_source(currency="JPY", precision=0)
    (source,) = parse_sources(document, tables=build_simple_trade().tables).values()
    assert (source.currency, source.precision) == ("JPY", 0)
