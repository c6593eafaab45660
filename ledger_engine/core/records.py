"""The values that flow through a run: events in, a `RunResult` out.

All of them are immutable and compare by value, so that the outcome of two runners can be
checked for equality field by field. The records a run makes one or more of per event
(`Change`, `Result`, `Rejection`, `Duplicate`, `Outcome`) are named tuples: a frozen dataclass
costs about four times as much to build (every field goes through `object.__setattr__`), which
at a few records per event was a tenth of the serial runner's time.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import msgspec

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

# Rejection reasons of the engine contract (docs/contract.md, point 7).
BAD_KEY = "bad_key"
INVALID_EVENT = "invalid_event"
TYPE_ERROR = "type_error"
OVERFLOW = "overflow"
ACCESS_VIOLATION = "access_violation"
ABORTED = "aborted"
FUNCTION_ERROR = "function_error"

# What becomes of an event: exactly one of these (docs/contract.md, point 7).
APPLIED, REJECTED, DUPLICATE = "applied", "rejected", "duplicate"

# Duplicate kinds (docs/contract.md, point 8).
EXISTS = "exists"
EXISTS_WITH_DIFFERENT_PAYLOAD = "exists_with_different_payload"


@dataclass(frozen=True)
class Event:
    """One input event. `payload` is the JSON object the stream's functions see.

    `stream`, `request_id` and `payload` are deliberately loosely typed: an event read from a
    file may lack any of them, and the runner must reject it rather than crash.
    """

    stream: Any
    request_id: Any
    payload: Any

    def fingerprint(self) -> str:
        """Hash of stream and payload, to tell a retry (`exists`) from a clash."""
        return canonical_hash([self.stream, self.payload])


# A named tuple's class call runs a Python `__new__` (a frame per record); `tuple.__new__`
# builds the same record in C. The executor's loops, which make several records per event,
# build them so: `record(Change, (request_id, table, key, before, after))`, every field given.
record = tuple.__new__


class Result(NamedTuple):
    """A result event emitted by a transaction function through `ctx.emit`."""

    stream: str
    request_id: str
    payload: Any


class Rejection(NamedTuple):
    """An event that had no effect. `reason` is one of the contract's codes; `detail` says why."""

    stream: Any
    request_id: Any
    reason: str
    detail: str = ""


class Duplicate(NamedTuple):
    """An event whose request id was seen before; `kind` is `exists` or
    `exists_with_different_payload`."""

    stream: Any
    request_id: str
    kind: str


class Change(NamedTuple):
    """One row write of an applied transaction: the row's value before and after it."""

    request_id: str
    table: str
    key: Any
    before: Any
    after: Any


class Outcome(NamedTuple):
    """What became of the event at one position of the run: `applied`, `rejected` or
    `duplicate`."""

    position: int
    request_id: Any
    status: str


@dataclass
class RunResult:
    """Everything a run produced. Two runners agree when their `RunResult`s are equal."""

    state: dict[str, dict[Any, Any]]
    results: list[Result] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    duplicates: list[Duplicate] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def applied_count(self) -> int:
        return sum(1 for o in self.outcomes if o.status == "applied")


def canonical_json(value: Any) -> str:
    """The one JSON encoding used for hashing and storage: sorted keys, no spaces."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_hash(value: Any) -> str:
    """SHA-256 of the canonical JSON; values JSON cannot hold are hashed by their `repr`."""
    try:
        text = canonical_json(value)
    except (TypeError, ValueError):
        text = "repr:" + repr(value)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# msgspec writes the same bytes as `canonical_json(...).encode()` for a *plain* value (see
# `storable.plain_json`: exact dicts, lists, ASCII text without NUL, int64 integers, booleans,
# null; no floats, whose exponent form it writes differently), five times faster.
# `tests/engine/test_canonical.py` holds the two encoders to that.
_PLAIN_ENCODER = msgspec.json.Encoder(order="sorted")


def plain_canonical_hash(value: Any) -> str:
    """`canonical_hash(value)` of a value that `storable.plain_json` accepts."""
    return hashlib.sha256(_PLAIN_ENCODER.encode(value)).hexdigest()


def plain_canonical_bytes(value: Any) -> bytes:
    """`canonical_json(value).encode()` of a value that `storable.plain_json` accepts."""
    return _PLAIN_ENCODER.encode(value)
