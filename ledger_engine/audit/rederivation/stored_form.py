"""What the system of record keeps of an event and of a JSON value, as read back from it.

The event log keeps a line's stream as text (a non-string stream as its JSON text, or its
`repr` when JSON cannot hold it; NULL when PostgreSQL text cannot hold the result), its request
id only when valid, and its payload as `jsonb` only when it is a storable object (NULL
otherwise). Results, change-log values and jsonb table values are `jsonb` too. These rules are
the staging's (`ledger_engine.store.staging`), written again here from the engine's own
definitions of what is storable, so that the replay does not vouch for the staging with the
staging's code.

`jsonb` keeps numbers as `numeric`, which it writes back in plain decimal notation with as many
digits after the point as the text it read had once its exponent was applied. So a float whose
shortest text has no digits left after the point (Python writes every float of magnitude 1e16
and beyond so, e.g. `1e+300`) reads back as an int, exactly the decimal that text names; and
-0.0 reads back as 0.0, as `numeric` has no negative zero. Every other JSON value reads back as
it was written (psycopg2 parses `jsonb` with `json.loads`). `jsonb_form` computes that read-back
value without a round trip; a property test checks it against PostgreSQL.

Two different events can have one stored form (a float and the int it reads back as; two
payloads that are not storable objects; the stream 5 and the stream "5"): `ambiguous` says
when a stored form may stand for more than one event.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from ledger_engine.core.admission import valid_request_id
from ledger_engine.core.records import Event, canonical_hash, canonical_json
from ledger_engine.core.storable import json_problem, storable_text

# Floats at least this large are written with an exponent and no digits after the point.
_INTEGRAL_FLOATS = 1e16


def jsonb_form(value: Any) -> Any:
    """`value` (a JSON value as Python holds it) as it reads back from a `jsonb` column."""
    kind = type(value)
    if kind is int or kind is str or kind is bool or value is None:
        return value
    if kind is float:
        return _number(value)
    if kind is dict:
        return {key: jsonb_form(item) for key, item in value.items()}
    if kind is list or kind is tuple:
        return [jsonb_form(item) for item in value]
    return value


def _number(value: float) -> float | int:
    """A float as `numeric` stores it and psycopg2 reads it back."""
    if value == 0:
        return 0.0  # numeric has no negative zero
    text = repr(value)  # what json.dumps writes
    mantissa, _, exponent = text.partition("e")
    if not exponent:
        return value  # plain notation always keeps a digit after the point
    digits_after_point = len(mantissa.partition(".")[2])
    if digits_after_point - int(exponent) > 0:
        return value  # written back with digits after the point: a float again
    return int(Decimal(text))


def same_json(a: Any, b: Any) -> bool:
    """Equal as stored values: unlike `==`, `true` is not `1` and `1.0` is not `1`, at any
    depth."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if type(a) is dict or type(a) is list:
        return a == b and canonical_json(a) == canonical_json(b)
    return a == b


def stored_text(value: Any) -> str | None:
    """A text column's value as the event log keeps it (see the module's docstring)."""
    if value is None:
        return None
    text = value
    if not isinstance(value, str):
        text = repr(value) if json_problem(value, "") is not None else canonical_json(value)
    return text if storable_text(text) else None


def stored_request_id(value: Any) -> str | None:
    """The request id the event log keeps: a valid one, else none."""
    return value if valid_request_id(value) else None


def stored_payload(event: Event) -> Any:
    """The payload the event log keeps, as it reads back: a storable object, else NULL."""
    payload = event.payload
    if not isinstance(payload, dict) or json_problem(payload, "payload") is not None:
        return None
    return jsonb_form(payload)


def stored_event(event: Event) -> tuple[str | None, str | None, Any]:
    """(stream, request id, payload) of `event` as the event log keeps and reads them back."""
    return stored_text(event.stream), stored_request_id(event.request_id), stored_payload(event)


def stored_fingerprint(event: Event) -> str:
    """The fingerprint of what the event log keeps of `event`'s stream and payload."""
    stream, _, payload = stored_event(event)
    return canonical_hash([stream, payload])


class StoredFormEvent(Event):
    """An event parsed from a line's stored bytes, fingerprinted by its stored form, so that it
    compares with events rebuilt from the event log's columns (whose fingerprint is that of
    their stored form already) the way the original events compared."""

    __slots__ = ()

    def fingerprint(self) -> str:
        return stored_fingerprint(self)


def ambiguous(stream: str | None, payload: Any) -> bool:
    """True if more than one event may have this stored stream and payload."""
    return payload is None or _ambiguous_stream(stream) or _ambiguous_json(payload)


def _ambiguous_stream(stream: str | None) -> bool:
    """A NULL stream, or text that a non-string stream is also stored as: its JSON text, or
    the `repr` of a list or object that JSON cannot hold."""
    if stream is None or stream.startswith(("[", "{")):
        return True
    try:
        return not isinstance(json.loads(stream), str)
    except ValueError:
        return False


def _ambiguous_json(value: Any) -> bool:
    kind = type(value)
    if kind is dict:
        return any(_ambiguous_json(item) for item in value.values())
    if kind is list:
        return any(_ambiguous_json(item) for item in value)
    if kind is float:
        return value == 0  # 0.0 may have been -0.0
    if kind is int and abs(value) >= _INTEGRAL_FLOATS:
        try:
            return _number(float(value)) == value  # a float may have been written
        except OverflowError:
            return False
    return False
