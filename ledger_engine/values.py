"""What a key or value must be to be stored: the checks behind `type_error` and `overflow`.

Every check returns `None` when the value is acceptable, or a `Problem` naming the reason code
and a human-readable detail. PostgreSQL cannot store the NUL character in `text` or `jsonb`, so
it is refused here rather than failing at commit time.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

from ledger_engine.model import INT64_MAX, INT64_MIN, OVERFLOW, TYPE_ERROR


@dataclass(frozen=True)
class Problem:
    reason: str
    detail: str


def storable_text(text: str) -> bool:
    """PostgreSQL text holds no NUL and only valid UTF-8 (no lone surrogates)."""
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def is_int(value: Any) -> bool:
    """True for Python ints that are not bools (bool is an int subclass, but not money)."""
    return isinstance(value, int) and not isinstance(value, bool)


def int64_problem(value: int, what: str) -> Problem | None:
    if INT64_MIN <= value <= INT64_MAX:
        return None
    return Problem(OVERFLOW, f"{what} {value} is outside the int64 range")


def _plain_json(value: Any) -> bool:
    """A fast test for the common case: a tree of exact JSON types that PostgreSQL can store.

    False does not mean unstorable: `json_problem` then walks the value again and says why.
    """
    kind = type(value)
    if kind is str:
        return "\x00" not in value and value.isascii()
    if kind is int or kind is bool or value is None:
        return kind is not int or INT64_MIN <= value <= INT64_MAX
    if kind is dict:
        return all(
            type(k) is str and "\x00" not in k and k.isascii() and _plain_json(v)
            for k, v in value.items()
        )
    if kind is list:
        return all(_plain_json(v) for v in value)
    return False


def json_problem(value: Any, what: str) -> Problem | None:
    """Why `value` cannot be stored as JSON (`None` if it can)."""
    if _plain_json(value):
        return None
    stack: list[tuple[Any, str]] = [(value, what)]
    while stack:
        item, where = stack.pop()
        if item is None or isinstance(item, bool) or is_int(item):
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                return Problem(TYPE_ERROR, f"{where} is {item}, which JSON cannot hold")
        elif isinstance(item, str):
            if not storable_text(item):
                return Problem(TYPE_ERROR, f"{where} contains a NUL or a lone surrogate")
        elif isinstance(item, dict):
            for key, inner in item.items():
                if not isinstance(key, str):
                    return Problem(TYPE_ERROR, f"{where} has a non-string key {key!r}")
                if not storable_text(key):
                    return Problem(TYPE_ERROR, f"{where} has a key with a NUL or a lone surrogate")
                stack.append((inner, f"{where}.{key}"))
        elif isinstance(item, list | tuple):
            stack.extend((inner, f"{where}[{i}]") for i, inner in enumerate(item))
        else:
            return Problem(TYPE_ERROR, f"{where} has a {type(item).__name__}, not a JSON value")
    return None


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
        return {k: json_copy(v) for k, v in value.items()}
    if kind is list:
        return [json_copy(v) for v in value]
    if kind is tuple:
        return tuple(json_copy(v) for v in value)
    return copy.deepcopy(value)


def key_text(key: str | int) -> str:
    """A key as text (an int key as its decimal digits), as text columns store it."""
    return key if isinstance(key, str) else str(key)
