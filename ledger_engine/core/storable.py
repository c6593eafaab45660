"""What a key or value must be to be stored: the checks behind `type_error` and `overflow`.

Every check returns `None` when the value is acceptable, or a `Problem` naming the reason code
and a human-readable detail. What PostgreSQL or the engine's own encoders would fail on later is
refused here, rather than failing the batch at commit time: the NUL character and lone
surrogates in `text` or `jsonb`, text keys and request ids too long for a B-tree index entry
(`MAX_ID_BYTES`), JSON nested deeper than `MAX_NESTING` levels (Python's encoders recurse), and
integers with more digits than Python will write as text.
"""

from __future__ import annotations

import copy
import math
import sys
from dataclasses import dataclass
from typing import Any

from ledger_engine.core.records import (
    INT64_MAX,
    INT64_MIN,
    OVERFLOW,
    TYPE_ERROR,
    canonical_json,
    plain_canonical_bytes,
)

# Arrays and objects may nest this many levels deep (a payload object is one level). Far below
# Python's recursion limit, so that the limit, not the stack depth of whoever runs the check,
# decides; far above what any ledger event needs.
MAX_NESTING = 64

# Text keys and request ids are indexed by PostgreSQL, whose B-tree entries hold at most 2704
# bytes; at most this many bytes of UTF-8 leaves room for the other columns of an index.
MAX_ID_BYTES = 1024


@dataclass(frozen=True)
class Problem:
    reason: str
    detail: str


def storable_text(text: str) -> bool:
    """PostgreSQL text holds no NUL and only valid UTF-8 (no lone surrogates)."""
    if "\x00" in text:
        return False
    if text.isascii():  # the common case, without encoding a copy
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def short_text(text: str) -> bool:
    """`text` (storable) fits an index entry: at most `MAX_ID_BYTES` bytes of UTF-8."""
    return len(text) <= MAX_ID_BYTES // 4 or len(text.encode("utf-8")) <= MAX_ID_BYTES


def is_int(value: Any) -> bool:
    """True for Python ints that are not bools (bool is an int subclass, but not money)."""
    return isinstance(value, int) and not isinstance(value, bool)


def int64_problem(value: int, what: str) -> Problem | None:
    if INT64_MIN <= value <= INT64_MAX:
        return None
    return Problem(OVERFLOW, f"{what} {value} is outside the int64 range")


def plain_json(value: Any, levels: int = MAX_NESTING) -> bool:
    """A fast test for the common case: a tree of exact JSON types that PostgreSQL can store,
    with ASCII text only and no floats, at most `levels` arrays or objects deep.

    False does not mean unstorable: `json_problem` then walks the value again and says why.
    True also means that `records.plain_canonical_hash` may hash the value. Written as plain
    loops (no generators): it runs on every payload and every emitted result.
    """
    kind = type(value)
    if kind is str:
        return value.isascii() and "\x00" not in value
    if kind is int:
        return INT64_MIN <= value <= INT64_MAX
    if kind is bool or value is None:
        return True
    if levels == 0:
        return False
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str or not key.isascii() or "\x00" in key:
                return False
            kind = type(item)  # scalars inline: most objects hold nothing else
            if kind is str:
                if not item.isascii() or "\x00" in item:
                    return False
            elif kind is int:
                if not INT64_MIN <= item <= INT64_MAX:
                    return False
            elif not (kind is bool or item is None or plain_json(item, levels - 1)):
                return False
        return True
    if kind is list:
        for item in value:  # noqa: SIM110 (all() over a generator costs more per item)
            if not _plain_item(item, levels):
                return False
        return True
    return False


def plain_flat_copy(value: dict[Any, Any]) -> dict[Any, Any] | None:
    """A copy of `value` if it is a flat object of `plain_json` scalars, else `None` (then
    `plain_json` and `json_copy` decide): the check and the copy of the common result in one
    pass."""
    for key, item in value.items():
        if type(key) is not str or not key.isascii() or "\x00" in key:
            return None
        kind = type(item)
        if kind is str:
            if not item.isascii() or "\x00" in item:
                return None
        elif kind is int:
            if not INT64_MIN <= item <= INT64_MAX:
                return None
        elif not (kind is bool or item is None):
            return None
    return value.copy()


def canonical_utf8(value: Any) -> bytes:
    """`records.canonical_json(value).encode()`, by the fast encoder where it writes the same
    bytes (`plain_json`: every bank payload, key and value)."""
    return plain_canonical_bytes(value) if plain_json(value) else canonical_json(value).encode()


def _plain_item(item: Any, levels: int) -> bool:
    """`plain_json` of a member of an array or object `levels` deep (scalars inline)."""
    kind = type(item)
    if kind is str:
        return item.isascii() and "\x00" not in item
    if kind is int:
        return INT64_MIN <= item <= INT64_MAX
    if kind is bool or item is None:
        return True
    return plain_json(item, levels - 1)


def _int_text_problem(value: int, where: str) -> Problem | None:
    """Python refuses to write ints beyond `sys.get_int_max_str_digits()` digits as text."""
    limit = sys.get_int_max_str_digits()
    # n bits make about 0.30103 * n digits: beyond 4 * limit bits surely too many, below
    # 3 * limit surely not; in between, try.
    if limit and value.bit_length() > 4 * limit:
        return Problem(TYPE_ERROR, f"{where} is an integer of more than {limit} digits")
    if limit and value.bit_length() >= 3 * limit:
        try:
            str(value)
        except ValueError:
            return Problem(TYPE_ERROR, f"{where} is an integer of more than {limit} digits")
    return None


def json_problem(value: Any, what: str) -> Problem | None:
    """Why `value` cannot be stored as JSON (`None` if it can)."""
    if plain_json(value):
        return None
    return _walk(value, what, writable_only=False)


def json_text_problem(value: Any, what: str) -> Problem | None:
    """Why `value` cannot even be encoded as JSON text or hashed: nested deeper than
    `MAX_NESTING` levels, or an integer too long for text (`None` if it can).

    Such a value is unsafe to hand to `json.dumps`, `repr` or `pickle`; other problems (NUL,
    non-finite floats, other types) leave it encodable in some form.
    """
    if type(value) is str or plain_json(value):
        return None
    return _walk(value, what, writable_only=True)


def _walk(value: Any, what: str, *, writable_only: bool) -> Problem | None:
    """The first problem found walking `value` (iteratively: it may nest without bound);
    `writable_only` looks only for what `json_text_problem` reports."""
    stack: list[tuple[Any, str, int]] = [(value, what, 0)]
    while stack:
        item, where, depth = stack.pop()
        if item is None or isinstance(item, bool):
            continue
        if is_int(item):
            problem = _int_text_problem(item, where)
            if problem is not None:
                return problem
        elif isinstance(item, dict | list | tuple):
            if depth == MAX_NESTING:
                return Problem(
                    TYPE_ERROR, f"{what} nests arrays or objects deeper than {MAX_NESTING} levels"
                )
            if isinstance(item, dict):
                for key, inner in item.items():
                    problem = _key_problem(key, where, writable_only=writable_only)
                    if problem is not None:
                        return problem
                    stack.append((inner, f"{where}.{brief(key, 40, quote=False)}", depth + 1))
            else:
                stack.extend((inner, f"{where}[{i}]", depth + 1) for i, inner in enumerate(item))
        elif writable_only:
            continue
        elif isinstance(item, float):
            if not math.isfinite(item):
                return Problem(TYPE_ERROR, f"{where} is {item}, which JSON cannot hold")
        elif isinstance(item, str):
            if not storable_text(item):
                return Problem(TYPE_ERROR, f"{where} contains a NUL or a lone surrogate")
        else:
            return Problem(TYPE_ERROR, f"{where} has a {type(item).__name__}, not a JSON value")
    return None


def _key_problem(key: Any, where: str, *, writable_only: bool) -> Problem | None:
    """Why `key` cannot be a key of a JSON object (of one that can be encoded at all, for
    `writable_only`: `json.dumps` writes int keys as text)."""
    if is_int(key):
        problem = _int_text_problem(key, f"{where} key")
        if problem is not None or writable_only:
            return problem
    if writable_only:
        return None
    if not isinstance(key, str):
        return Problem(TYPE_ERROR, f"{where} has a non-string key {brief(key)}")
    if not storable_text(key):
        return Problem(TYPE_ERROR, f"{where} has a key with a NUL or a lone surrogate")
    return None


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type (`object`, `array`, `string`, ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def brief(value: Any, limit: int = 80, *, quote: bool = True) -> str:
    """`repr(value)` (or a str itself, when not `quote`) cut to about `limit` characters, as
    storable text, for a rejection's detail: an event's values can be as long as its line."""
    if isinstance(value, str):
        text = repr(value[: limit + 1]) if quote else value[: limit + 1]
    elif type(value) is int and value.bit_length() > 4 * limit:
        return f"<an integer of {value.bit_length()} bits>"
    else:
        text = repr(value)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    if storable_text(text):
        return text
    return text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")


def error_text(exc: BaseException) -> str:
    """`<ExceptionType>: <message>` of an application's exception, as storable text of at
    most about 500 characters (its message may hold anything, NUL included)."""
    return brief(f"{type(exc).__name__}: {exc}", 500, quote=False)


def key_problem(key: Any, key_type: type, what: str) -> Problem | None:
    """Why `key` cannot be a key of a table with `key_type` (`None` if it can)."""
    if key_type is int:
        if not is_int(key):
            return Problem(TYPE_ERROR, f"{what} must be an int, got {type(key).__name__}")
        return int64_problem(key, what)
    if not isinstance(key, str):
        return Problem(TYPE_ERROR, f"{what} must be a str, got {type(key).__name__}")
    if not storable_text(key):
        return Problem(TYPE_ERROR, f"{what} contains a NUL or a lone surrogate")
    if not short_text(key):
        return Problem(TYPE_ERROR, f"{what} is longer than {MAX_ID_BYTES} bytes")
    return None


def value_problem(value: Any, value_type: type, what: str) -> Problem | None:
    """Why `value` cannot be stored in a table of `value_type` (`None` if it can).

    `None` is always acceptable: writing it deletes the row.
    """
    if value is None:
        return None
    if value_type is int:
        if not is_int(value):
            return Problem(TYPE_ERROR, f"{what} must be an int, got {type(value).__name__}")
        return int64_problem(value, what)
    if value_type is str:
        if not isinstance(value, str):
            return Problem(TYPE_ERROR, f"{what} must be a str, got {type(value).__name__}")
        return json_problem(value, what)
    if not isinstance(value, dict):
        return Problem(TYPE_ERROR, f"{what} must be a dict, got {type(value).__name__}")
    return json_problem(value, what)


def json_copy(value: Any) -> Any:
    """A private copy of a JSON-like value (what `copy.deepcopy` gives, faster).

    Exact dicts, lists and tuples are copied level by level and immutable scalars shared; any
    other type goes through `copy.deepcopy`.
    """
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None or kind is float:
        return value
    if kind is dict:
        for item in value.values():
            kind = type(item)
            if not (kind is str or kind is int or kind is bool or item is None or kind is float):
                return {k: json_copy(v) for k, v in value.items()}
        return value.copy()  # a flat object, the common case: its members are immutable
    if kind is list:
        return [json_copy(v) for v in value]
    if kind is tuple:
        return tuple(json_copy(v) for v in value)
    return copy.deepcopy(value)


def key_text(key: str | int) -> str:
    """A key as text (an int key as its decimal digits), as text columns store it."""
    return key if isinstance(key, str) else str(key)
