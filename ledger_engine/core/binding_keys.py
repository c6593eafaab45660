"""Where a binding's key comes from, and how an event whose payload gives no usable key is told
in the words of the payload the user wrote.

A binding reads its key from one payload field (declared by the field's name, or with
`operator.itemgetter(name)`), or computes it with a function of the payload. A reason names
the field for the first (`field 'source_account_id' is null: ...`), never the binding's
internal name; for the second it names the binding, its stream and table, and shows what the
payload held, since the field the function reads cannot be known.
"""

from __future__ import annotations

import json
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from ledger_engine.core.storable import brief, error_text

if TYPE_CHECKING:
    from ledger_engine.core.declarations import Binding

PAYLOAD_SHOWN = 300  # characters of the payload a reason shows, at most


def payload_field(key_fn: object) -> str | None:
    """The payload field `key_fn` reads the key from, if it is `itemgetter(field)`."""
    if type(key_fn) is not itemgetter:
        return None
    _, items = key_fn.__reduce__()
    return items[0] if len(items) == 1 and isinstance(items[0], str) else None


def key_subject(binding: Binding) -> str:
    """What a key problem is said of: the field, or the binding and its table."""
    if binding.payload_field is not None:
        return f"field {binding.payload_field!r}"
    return f"key of {_binding(binding)} (a row of {binding.table.name!r})"


def no_key(binding: Binding, payload: Any) -> str:
    """Why an event is rejected whose binding's key is None."""
    table = binding.table.name
    if binding.payload_field is not None:
        return f"field {binding.payload_field!r} is null: it must name a row of {table!r}"
    return (
        f"{_binding(binding)} found no row of {table!r}: its key function gave None"
        f" for the payload {_payload_text(payload)}"
    )


def key_failed(binding: Binding, exc: Exception, payload: Any) -> str:
    """Why an event is rejected whose binding's key function raised `exc`."""
    table = binding.table.name
    field = binding.payload_field
    if field is not None and isinstance(exc, KeyError):
        return f"payload lacks field {field!r}, which must name a row of {table!r}"
    if field is not None:
        return f"field {field!r} cannot be read: {error_text(exc)}"
    return (
        f"{_binding(binding)} found no row of {table!r}: its key function raised"
        f" {error_text(exc)} for the payload {_payload_text(payload)}"
    )


def _binding(binding: Binding) -> str:
    return f"binding {binding.name!r} of stream {binding.stream!r}"


def _payload_text(payload: Any) -> str:
    """The payload as JSON, as the user wrote it (in memory: as it would be written), cut to
    `PAYLOAD_SHOWN` characters."""
    try:
        text = json.dumps(payload, ensure_ascii=False, separators=(", ", ": "))
    except (TypeError, ValueError, RecursionError):  # an in-memory payload of other values
        text = repr(payload)
    return brief(text, PAYLOAD_SHOWN, quote=False)
