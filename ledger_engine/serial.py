"""The reference runner: events executed one at a time, in the order given.

Every other runner must produce a `RunResult` equal to `run_serial`'s on the same input.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any

from ledger_engine.api import Stream, StreamingLedger, Table
from ledger_engine.model import (
    EXISTS,
    EXISTS_WITH_DIFFERENT_PAYLOAD,
    INVALID_EVENT,
    Duplicate,
    Event,
    Outcome,
    Rejection,
    RunResult,
)
from ledger_engine.transaction import Applied, execute, resolve_keys
from ledger_engine.values import (
    Problem,
    json_problem,
    key_problem,
    storable_text,
    value_problem,
)

State = dict[str, dict[Any, Any]]


def valid_request_id(request_id: Any) -> bool:
    """A request id is a non-empty string PostgreSQL can store."""
    return isinstance(request_id, str) and bool(request_id) and storable_text(request_id)


def admit(
    streams: Mapping[str, Stream], event: Event, seen: MutableMapping[str, str]
) -> Stream | Rejection | Duplicate:
    """Decide whether `event` runs: its stream, or why it is rejected or a duplicate.

    A request id is remembered (in `seen`, id -> fingerprint) as soon as it is admitted or
    rejected here, so that a retry of a rejected event is a duplicate too.
    """
    rid = event.request_id
    if not valid_request_id(rid):
        return Rejection(event.stream, rid, INVALID_EVENT, "request_id must be a non-empty string")
    fingerprint = event.fingerprint()
    first = seen.get(rid)
    if first is not None:
        kind = EXISTS if first == fingerprint else EXISTS_WITH_DIFFERENT_PAYLOAD
        return Duplicate(event.stream, rid, kind)
    seen[rid] = fingerprint
    stream = streams.get(event.stream) if isinstance(event.stream, str) else None
    if stream is None:
        return Rejection(event.stream, rid, INVALID_EVENT, f"unknown stream {event.stream!r}")
    if not isinstance(event.payload, dict):
        kind = type(event.payload).__name__
        return Rejection(event.stream, rid, INVALID_EVENT, f"payload must be an object, not {kind}")
    problem = json_problem(event.payload, "payload")
    if problem is not None:
        return Rejection(event.stream, rid, INVALID_EVENT, problem.detail)
    return stream


def initial_state(ledger: StreamingLedger, state: Mapping[str, Mapping[Any, Any]] | None) -> State:
    """A private, checked copy of `state` with an entry for every declared table."""
    tables = ledger.tables
    unknown = set(state or {}) - set(tables)
    if unknown:
        raise ValueError(f"state names undeclared tables: {sorted(unknown)}")
    result: State = {name: {} for name in tables}
    for name, rows in (state or {}).items():
        table = tables[name]
        for key, value in rows.items():
            problem = key_problem(key, table.key_type, f"{name} key") or value_problem(
                value, table.value_type, f"{name}[{key!r}]"
            )
            if problem is not None or value is None:
                raise ValueError(f"initial state: {problem.detail if problem else 'None value'}")
        result[name] = copy.deepcopy(dict(rows))
    return result


def run_event(
    streams: Mapping[str, Stream],
    event: Event,
    state: State,
    seen: MutableMapping[str, str],
) -> Applied | Rejection | Duplicate:
    """Run one event against `state` (mutated in place when the transaction commits)."""
    admitted = admit(streams, event, seen)
    if not isinstance(admitted, Stream):
        return admitted
    keys = resolve_keys(admitted, event.payload)
    if isinstance(keys, Problem):
        return Rejection(event.stream, event.request_id, keys.reason, keys.detail)
    outcome = execute(admitted, event, keys, lambda table, key: _read(state, table, key))
    if isinstance(outcome, Applied):
        for change in outcome.changes:
            rows = state[change.table]
            if change.after is None:
                rows.pop(change.key, None)
            else:
                rows[change.key] = change.after
    return outcome


def record(result: RunResult, position: int, event: Event, outcome: Any) -> None:
    """Append one event's outcome to `result`."""
    if isinstance(outcome, Applied):
        result.changes.extend(outcome.changes)
        result.results.extend(outcome.results)
        status = "applied"
    elif isinstance(outcome, Rejection):
        result.rejections.append(outcome)
        status = "rejected"
    else:
        assert isinstance(outcome, Duplicate), f"unexpected outcome {outcome!r}"
        result.duplicates.append(outcome)
        status = "duplicate"
    result.outcomes.append(Outcome(position, event.request_id, status))


def run_serial(
    ledger: StreamingLedger,
    events: Iterable[Event],
    state: Mapping[str, Mapping[Any, Any]] | None = None,
    known_requests: Mapping[str, str] | None = None,
) -> RunResult:
    """Execute `events` one at a time, in order, starting from `state`.

    `known_requests` maps request ids committed by earlier runs to their event fingerprints;
    events reusing them are duplicates.
    """
    ledger.check()
    streams = ledger.streams
    current = initial_state(ledger, state)
    seen: dict[str, str] = dict(known_requests or {})
    result = RunResult(state=current)
    for position, event in enumerate(events):
        record(result, position, event, run_event(streams, event, current, seen))
    assert len(result.outcomes) == len(result.rejections) + len(result.duplicates) + sum(
        1 for o in result.outcomes if o.status == "applied"
    )
    return result


def _read(state: State, table: Table, key: Any) -> Any:
    return state[table.name].get(key)
