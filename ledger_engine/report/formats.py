"""How numbers, times and counts read on a page: the templates' filters.

Each returns plain text; the templates' autoescaping makes it safe in HTML.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from ledger_engine.core.money import Unit, money_text
from ledger_engine.report.queries import ThroughputPoint

MISSING = "—"  # a number not known (a summary that lacks it, a rate with no time measured)


def thousands(n: int) -> str:
    """A whole number with thousands separators: 1,234,567."""
    return f"{n:,}"


def seconds(value: float) -> str:
    """Seconds to the millisecond."""
    return f"{value:,.3f}"


def count_text(count: Any) -> str:
    """A count read from a summary file, which may lack it or hold something else."""
    return thousands(count) if isinstance(count, int) else MISSING


def rate_text(rate: float | None) -> str:
    """Events per second: whole above 100, one decimal below (0.4 must not read as 0)."""
    if rate is None:
        return MISSING
    return f"{rate:,.0f}" if rate >= 100 else f"{rate:,.1f}"


def plural(n: int, noun: str) -> str:
    """`n` and the noun, plural unless one: "1 check", "3 checks"."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def all_of(n: int, noun: str = "audit check") -> str:
    """The subject of a sentence about every one: "The 1 audit check", "All 3 audit checks"."""
    return f"The {n:,} {noun}" if n == 1 else f"All {n:,} {noun}s"


def utc_time(moment: datetime) -> str:
    """A moment in UTC, to the second."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def batch_span(point: ThroughputPoint) -> str:
    """The batches of a chart point: "7", or "0–99" when consecutive batches are grouped."""
    if point.first_batch == point.last_batch:
        return thousands(point.first_batch)
    return f"{point.first_batch:,}–{point.last_batch:,}"


def share_text(part: int, whole: int) -> str:
    """`part` of `whole` in per cent, rounded to the nearest tenth (20 of 30: 66.7%), but
    100.0% only when all of it and "< 0.1%" for a part too small to show but not none; "—"
    when there is no whole."""
    if whole <= 0:
        return MISSING
    tenths = (part * 2000 + whole) // (2 * whole)  # half a tenth and up rounds up, exactly
    if part < whole:
        tenths = min(tenths, 999)
    if tenths == 0 and part > 0:
        return "< 0.1%"
    return f"{tenths // 10}.{tenths % 10}%"


def amount_text(units: int | None, unit: Unit | None) -> str:
    """An amount of integer minor units as money in `unit` (`ledger_engine.core.money`, the one
    place minor units become money: "-1,234.56 EUR"; the integer with thousands separators
    where no unit is known); "—" for no amount."""
    return MISSING if units is None else money_text(units, unit)


def age_text(age: timedelta) -> str:
    """How long ago, to the largest two units that matter: "3 d 4 h", "5 h 12 min", "7 min"."""
    minutes = max(int(age.total_seconds()) // 60, 0)
    days, minutes = divmod(minutes, 24 * 60)
    hours, minutes = divmod(minutes, 60)
    if days:
        return f"{days:,} d {hours} h"
    return f"{hours} h {minutes} min" if hours else f"{minutes} min"


FILTERS: dict[str, Callable[..., str]] = {
    "thousands": thousands,
    "seconds": seconds,
    "count_text": count_text,
    "rate_text": rate_text,
    "plural": plural,
    "all_of": all_of,
    "utc_time": utc_time,
    "batch_span": batch_span,
    "share": share_text,
    "money": amount_text,
    "age": age_text,
}
