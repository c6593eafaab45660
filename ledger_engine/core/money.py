"""Money as money: the unit a table of integer minor units declares, and how its amounts read.

A table of `int` values may declare its unit, a code and a precision, written `CODE/PRECISION`
(`"EUR/2"`: euros, two decimal places, so the stored 123456 reads "1,234.56 EUR")::

    ledger.declare_state("accounts", key_type=str, value_type=int, unit="EUR/2")

Storage and arithmetic stay integer: the unit only says how a person reads an amount. The code
is a currency (ISO 4217 `EUR`, `USD`) or any other unit a ledger counts in (`BTC`, `units`):
a letter then letters or digits, at most `MAX_CODE` characters, so that it reads as one word
after the number and can be stored and shown anywhere. The precision is the number of decimal
places of the minor units, 0 to `MAX_PRECISION` (an int64 has 19 digits).

`money_text` is the one place an amount becomes text, for the command line and the reports
alike; PostgreSQL's `ledger_money_text` (`sql/0021_declared_units.sql`, rewritten by 0022)
writes exactly the same text, for the views people query and the audits' findings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_CODE = 12
MAX_PRECISION = 18
_CODE = re.compile(rf"[A-Za-z][A-Za-z0-9]{{0,{MAX_CODE - 1}}}")
_WRITTEN = re.compile(r"([^/]*)/([0-9]+)")


@dataclass(frozen=True)
class Unit:
    """What a table's integer amounts count: `code` (a currency or another unit) in minor units
    of `precision` decimal places. Build one with `parse_unit` (or directly, then checked)."""

    code: str
    precision: int

    def __post_init__(self) -> None:
        problem = unit_problem(self.code, self.precision)
        if problem is not None:
            raise ValueError(problem)

    def __str__(self) -> str:
        return f"{self.code}/{self.precision}"


def unit_problem(code: object, precision: object) -> str | None:
    """What is wrong with a unit of this `code` and `precision` (`None` if nothing is)."""
    if not isinstance(code, str) or not _CODE.fullmatch(code):
        return (
            f"the unit's code must be a letter followed by letters or digits, at most "
            f"{MAX_CODE} characters (a currency such as EUR, or a unit such as units), "
            f"not {code!r}"
        )
    if (
        not isinstance(precision, int)
        or isinstance(precision, bool)
        or not 0 <= precision <= MAX_PRECISION
    ):
        return (
            f"the unit's precision must be a whole number from 0 to {MAX_PRECISION}, "
            f"not {precision!r}"
        )
    return None


def parse_unit(written: str | Unit) -> Unit:
    """The unit written as `CODE/PRECISION` (`"EUR/2"`), or `written` itself if it is a `Unit`.
    Raises `ValueError` saying what is wrong."""
    if isinstance(written, Unit):
        return written
    if not isinstance(written, str):
        raise ValueError(f"a unit is written CODE/PRECISION (such as 'EUR/2'), not {written!r}")
    match = _WRITTEN.fullmatch(written)
    if match is None:
        raise ValueError(f"a unit is written CODE/PRECISION (such as 'EUR/2'), not {written!r}")
    return Unit(match[1], int(match[2]))


def money_text(units: int, unit: Unit | None) -> str:
    """An amount of integer minor units as a person reads it: "-1,234.56 EUR" in the code and
    at the precision of `unit`; without a unit, the integer with thousands separators
    ("-123,456"). Exact for any integer (no float on the way)."""
    if unit is None:
        return f"{units:,}"
    sign = "-" if units < 0 else ""
    whole, fraction = divmod(abs(units), 10**unit.precision)
    decimals = f".{fraction:0{unit.precision}d}" if unit.precision > 0 else ""
    return f"{sign}{whole:,}{decimals} {unit.code}"
