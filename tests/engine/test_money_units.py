"""Money as money: a table of integer minor units declares what they count (`EUR/2`), and its
amounts read formatted ("1,234.56 EUR") while they stay integers; a table without a unit reads
as a plain integer with thousands separators. Bad declarations are refused as they are made."""

from __future__ import annotations

import pytest

from ledger_engine import DeclarationError, StreamingLedger
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.core.money import MAX_PRECISION, Unit, money_text, parse_unit
from tests.support.apps.simple_trade import build_ledger as build_simple_trade

EUR = Unit("EUR", 2)


@pytest.fixture
def ledger() -> StreamingLedger:
    return StreamingLedger.create("units")


# --- Declaring a unit ----------------------------------------------------------------------


def test_a_table_of_integers_declares_its_unit_as_code_and_precision(ledger):
    table = ledger.declare_state("accounts", key_type=str, value_type=int, unit="EUR/2")
    assert table.unit == EUR
    assert (table.unit.code, table.unit.precision, str(table.unit)) == ("EUR", 2, "EUR/2")
    assert ledger.declare_state("shares", unit=Unit("units", 0)).unit == Unit("units", 0)


def test_a_table_without_a_unit_holds_plain_integers(ledger):
    assert ledger.declare_state("counts").unit is None


def test_the_bank_declares_euro_cents_and_whole_asset_units():
    tables = build_ledger().tables
    assert tables["accounts"].unit == EUR
    assert tables["asset_ledger"].unit == Unit("units", 0)


def test_a_ledger_may_declare_no_unit_at_all():
    assert {t.unit for t in build_simple_trade().tables.values()} == {None}


@pytest.mark.parametrize("value_type", [str, dict])
def test_a_unit_on_a_table_of_anything_but_integers_is_refused(ledger, value_type):
    with pytest.raises(DeclarationError, match=r"table 'notes': only a table of int may declare"):
        ledger.declare_state("notes", value_type=value_type, unit="EUR/2")


@pytest.mark.parametrize(
    ("written", "problem"),
    [
        ("EUR", r"written CODE/PRECISION.*'EUR'"),
        ("EUR/", r"written CODE/PRECISION"),
        ("EUR/2.5", r"written CODE/PRECISION"),
        ("EUR/-1", r"written CODE/PRECISION"),
        (("EUR", 2), r"written CODE/PRECISION"),
        ("/2", r"code must be a letter.*not ''"),
        ("E UR/2", r"code must be a letter.*not 'E UR'"),
        ("2EUR/2", r"code must be a letter"),
        ("€/2", r"code must be a letter"),
        ("EUR;DROP/2", r"code must be a letter"),
        ("ABCDEFGHIJKLM/2", r"at most 12 characters"),
        (f"EUR/{MAX_PRECISION + 1}", r"precision must be a whole number from 0 to 18, not 19"),
    ],
)
def test_a_badly_written_unit_is_refused_saying_what_is_wrong(ledger, written, problem):
    with pytest.raises(DeclarationError, match=rf"table 'accounts': .*{problem}"):
        ledger.declare_state("accounts", unit=written)
    assert "accounts" not in ledger.tables


def test_a_unit_built_directly_is_checked_too():
    with pytest.raises(ValueError, match="precision"):
        Unit("EUR", True)
    assert parse_unit(EUR) is EUR and parse_unit("BTC/8") == Unit("BTC", 8)


# --- Reading an amount ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("units", "unit", "shown"),
    [
        (123456, EUR, "1,234.56 EUR"),
        (-123456, EUR, "-1,234.56 EUR"),
        (5, EUR, "0.05 EUR"),
        (-5, EUR, "-0.05 EUR"),
        (0, EUR, "0.00 EUR"),
        (1_000_000, Unit("units", 0), "1,000,000 units"),
        (123, Unit("BTC", 8), "0.00000123 BTC"),
        (-(2**63), Unit("X", 18), "-9.223372036854775808 X"),
        (2**63 - 1, EUR, "92,233,720,368,547,758.07 EUR"),
        (1234567, None, "1,234,567"),
        (-1000, None, "-1,000"),
    ],
)
def test_an_amount_reads_in_its_unit_exactly(units, unit, shown):
    assert money_text(units, unit) == shown
