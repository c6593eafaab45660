"""Reading amounts and dates as statements write them, exactly: decimal text to integer minor
units (never through a float), and dates in a source's format."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal, InvalidOperation

from ledger_engine.core.records import INT64_MAX, INT64_MIN


class AmountProblem(ValueError):
    """Text that is not an amount the source may state; the message says why."""


def minor_units(
    text: str, precision: int, *, decimal_separator: str = ".", thousands_separator: str = ""
) -> int:
    """`text` (e.g. ``"-1234.5"``; ``"1.234,50"`` with `decimal_separator` ``","`` and
    `thousands_separator` ``"."``) as an integer of minor units at `precision` decimal places
    (``-123450`` at 2).

    Raises `AmountProblem` for text that is not a plain decimal number, has more decimal places
    than `precision`, or lies outside int64 once scaled."""
    assert 0 <= precision <= 18, precision
    assert decimal_separator != thousands_separator, "the two separators must differ"
    cleaned = text.strip()
    if thousands_separator:
        cleaned = cleaned.replace(thousands_separator, "")
    if decimal_separator != ".":
        if "." in cleaned:
            raise AmountProblem(f"{text!r} is not a decimal amount")
        cleaned = cleaned.replace(decimal_separator, ".")
    if not cleaned or not all(c in "+-.0123456789" for c in cleaned):
        raise AmountProblem(f"{text!r} is not a decimal amount")
    try:
        value = Decimal(cleaned)
    except InvalidOperation:
        raise AmountProblem(f"{text!r} is not a decimal amount") from None
    scaled = value.scaleb(precision)
    if scaled != scaled.to_integral_value():
        raise AmountProblem(f"{text!r} has more than {precision} decimal places")
    units = int(scaled)
    if not INT64_MIN <= units <= INT64_MAX:
        raise AmountProblem(f"{text!r} is beyond the int64 range of minor units")
    return units


def parse_date(text: str, date_format: str) -> date:
    """`text` as a date in `date_format` (`strptime`'s codes); `ValueError` if it is not."""
    return datetime.strptime(text.strip(), date_format).date()
