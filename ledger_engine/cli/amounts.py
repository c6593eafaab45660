"""Amounts as the `ledger` command shows them: money in its unit for a person ("28,092.32
EUR", `core.money.money_text`) and, for a script (--json), an exact decimal string beside its
unit ({"amount": "28092.32", "unit": "EUR"}), never a float and never minor units alone."""

from __future__ import annotations

from typing import Any

from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.core.money import Unit, money_text
from ledger_engine.core.records import canonical_json


def decimal_text(units: int, unit: Unit | None) -> str:
    """`units` minor units as an exact decimal string at `unit`'s precision ("-1234.56"), no
    separators; the integer where no unit is known."""
    if unit is None or unit.precision == 0:
        return str(units)
    sign = "-" if units < 0 else ""
    whole, fraction = divmod(abs(units), 10**unit.precision)
    return f"{sign}{whole}.{fraction:0{unit.precision}d}"


def amount_json(units: int, unit: Unit | None) -> dict[str, Any]:
    """An amount for --json: its exact decimal string and its unit's code (None: no unit)."""
    return {"amount": decimal_text(units, unit), "unit": unit.code if unit else None}


def stream_unit(ledger: StreamingLedger, stream: str | None) -> Unit | None:
    """The unit of the amounts a stream's results carry: the one unit every table it binds
    declares (a balance lookup's, an adjustment's); None where it binds tables of different
    units or of none, since a result does not say which of them an integer counts."""
    declared = ledger.streams.get(stream) if stream is not None else None
    if declared is None:
        return None
    units = {b.table.unit for b in declared.bindings if b.table.unit is not None}
    return units.pop() if len(units) == 1 else None


def _is_amount(value: object) -> bool:
    return type(value) is int  # bool is not an amount


def result_amounts(payload: Any, unit: Unit | None) -> dict[str, dict[str, Any]]:
    """The amounts of a result payload in `unit`, by field, for --json (none without a unit)."""
    if unit is None or not isinstance(payload, dict):
        return {}
    return {k: amount_json(v, unit) for k, v in payload.items() if _is_amount(v)}


def result_words(payload: Any, unit: Unit | None) -> str:
    """A result payload for a person: "account_id alice, balance 28,092.32 EUR" (its integers
    as money in `unit`); canonical JSON as it was stored where the stream has no one unit (an
    integer might count any of its tables' units) or the payload is no object."""
    if unit is None or not isinstance(payload, dict):
        return canonical_json(payload)

    def shown(value: Any) -> str:
        if _is_amount(value):
            return money_text(value, unit)
        return value if isinstance(value, str) else canonical_json(value)

    return ", ".join(f"{field} {shown(value)}" for field, value in payload.items())
