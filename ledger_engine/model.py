"""The values that flow through a run: events in, a `RunResult` out.

All of them are immutable and compare by value, so that the outcome of two runners can be
checked for equality field by field.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

# Rejection reasons of the engine contract (DESIGN.md, point 7).
BAD_KEY = "bad_key"
INVALID_EVENT = "invalid_event"
TYPE_ERROR = "type_error"
OVERFLOW = "overflow"
ACCESS_VIOLATION = "access_violation"
ABORTED = "aborted"
FUNCTION_ERROR = "function_error"

# What becomes of an event: exactly one of these (DESIGN.md, point 7).
APPLIED, REJECTED, DUPLICATE = "applied", "rejected", "duplicate"

# Duplicate kinds (DESIGN.md, point 8).
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


@dataclass(frozen=True)
class Result:
    """A result event emitted by a transaction function through `ctx.emit`."""

    stream: str
    request_id: str
    payload: Any


@dataclass(frozen=True)
class Rejection:
    """An event that had no effect. `reason` is one of the contract's codes; `detail` says why."""

    stream: Any
    request_id: Any
    reason: str
    detail: str = ""


@dataclass(frozen=True)
class Duplicate:
    """An event whose request id was seen before; `kind` is `exists` or
    `exists_with_different_payload`."""

    stream: Any
    request_id: str
    kind: str


@dataclass(frozen=True)
class Change:
    """One row write of an applied transaction: the row's value before and after it."""

    request_id: str
    table: str
    key: Any
    before: Any
    after: Any


@dataclass(frozen=True)
class Outcome:
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
