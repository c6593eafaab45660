"""The reference runner: events executed one at a time, in the order given.

Every other runner must produce a `RunResult` equal to `run_serial`'s on the same input.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ledger_engine.core.admission import Screened, Seen, admit, remembered_fingerprint
from ledger_engine.core.declarations import Stream, StreamingLedger, Table
from ledger_engine.core.records import (
    APPLIED,
    DUPLICATE,
    INT64_MAX,
    INT64_MIN,
    REJECTED,
    Duplicate,
    Event,
    Outcome,
    Rejection,
    RunResult,
    record,
)
from ledger_engine.core.storable import MAX_ID_BYTES, json_copy, key_problem, value_problem
from ledger_engine.core.transaction import Applied, execute
from ledger_engine.runtime.gc_pause import gc_paused

State = dict[str, dict[Any, Any]]


def initial_state(ledger: StreamingLedger, state: Mapping[str, Mapping[Any, Any]] | None) -> State:
    """A private, checked copy of `state` with an entry for every declared table."""
    tables = ledger.tables
    unknown = set(state or {}) - set(tables)
    if unknown:
        raise ValueError(f"state names undeclared tables: {sorted(unknown)}")
    result: State = {name: {} for name in tables}
    for name, rows in (state or {}).items():
        table = tables[name]
        if _plain_rows(rows, table):
            result[name] = dict(rows)  # int values are immutable: nothing to copy deeper
            continue
        for key, value in rows.items():
            problem = key_problem(key, table.key_type, f"{name} key") or value_problem(
                value, table.value_type, f"{name}[{key!r}]"
            )
            if problem is not None or value is None:
                detail = problem.detail if problem else "None value"
                raise ValueError(f"initial state: {detail}")
        result[name] = {k: json_copy(v) for k, v in rows.items()}
    return result


def _plain_rows(rows: Mapping[Any, Any], table: Table) -> bool:
    """A fast test that every row of an (int or str key) -> int table is storable; False sends
    the rows through the detailed checks, which say what is wrong. Built of whole-collection
    operations that run in C: a state can hold millions of rows."""
    if table.value_type is not int or not rows:
        return table.value_type is int
    keys, values = rows.keys(), rows.values()
    if table.key_type is str:
        if set(map(type, keys)) != {str}:
            return False
        joined = "".join(keys)  # ASCII, so each key's length is its size in bytes
        keys_ok = joined.isascii() and "\x00" not in joined and max(map(len, keys)) <= MAX_ID_BYTES
    else:
        keys_ok = set(map(type, keys)) == {int} and _int64s(keys)
    return keys_ok and set(map(type, values)) == {int} and _int64s(values)


def _int64s(numbers: Iterable[int]) -> bool:
    """Whether every one of the (exact int) `numbers` is in the int64 range."""
    return min(numbers) >= INT64_MIN and max(numbers) <= INT64_MAX


def run_events(
    streams: Mapping[str, Stream],
    events: Iterable[Event],
    state: State,
    seen: Seen,
    result: RunResult,
) -> None:
    """Run `events` one at a time against `state` (mutated as each transaction commits),
    appending each one's outcome to `result`: the executor in one loop, with no call per event
    beyond admission's and the transaction's own."""
    changes, results, outcomes = result.changes, result.results, result.outcomes
    rejections, duplicates = result.rejections, result.duplicates
    for position, event in enumerate(events):
        admitted = admit(streams, event, seen)
        if type(admitted) is Screened:
            assert admitted.stream is not None and admitted.keys is not None
            outcome = execute(admitted.stream, event, admitted.keys, state)
        else:
            outcome = admitted
        kind = type(outcome)
        if kind is Applied:
            for _, table, key, _, after in outcome.changes:
                if after is None:
                    state[table].pop(key, None)
                else:
                    state[table][key] = after
            changes.extend(outcome.changes)
            results.extend(outcome.results)
            status = APPLIED
        elif kind is Rejection:
            rejections.append(outcome)
            status = REJECTED
        else:
            assert kind is Duplicate, f"unexpected outcome {outcome!r}"
            duplicates.append(outcome)
            status = DUPLICATE
        outcomes.append(record(Outcome, (position, event.request_id, status)))


class SerialRun:
    """The serial runner as a chain: one state and one map of seen request ids, carried from
    one `run` to the next, so that runs over consecutive chunks of events give together
    exactly what one run over all of them gives (without copying the state per chunk)."""

    def __init__(
        self,
        ledger: StreamingLedger,
        state: Mapping[str, Mapping[Any, Any]] | None = None,
        known_requests: Mapping[str, str] | None = None,
    ) -> None:
        ledger.check()
        self.streams = ledger.streams
        with gc_paused():  # copying a large state makes many objects at once
            self.state: State = initial_state(ledger, state)
        # request id -> fingerprint of its event (or the event, its fingerprint not yet needed)
        self.seen: Seen = dict(known_requests or {})

    def run(self, events: Iterable[Event], *, last: bool = False) -> RunResult:
        """Execute the next events; the `RunResult` (positions from 0) shares the state.

        `last`: no run follows, so the events this run remembered by their request ids need
        not give way to their fingerprints (see `_fingerprint_remembered`).
        """
        result = RunResult(state=self.state)
        with gc_paused():
            run_events(self.streams, events, self.state, self.seen, result)
            if not last:
                self._fingerprint_remembered(result)
        statuses = [o.status for o in result.outcomes]
        assert statuses.count("rejected") == len(result.rejections)
        assert statuses.count("duplicate") == len(result.duplicates)
        return result

    def _fingerprint_remembered(self, result: RunResult) -> None:
        """Replace each event this run remembered (`admission.Seen`) by its fingerprint.

        A chain of runs over a whole log (the replay audit) would otherwise hold every event
        of the log, about five times the memory of its fingerprint. Walks this run's
        outcomes, not everything seen so far: the cost is the run's, not the history's.
        """
        seen = self.seen
        for outcome in result.outcomes:
            rid = outcome.request_id
            if type(rid) is str:
                first = seen.get(rid)
                if first is not None:
                    seen[rid] = remembered_fingerprint(first)


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
    return SerialRun(ledger, state, known_requests).run(events, last=True)
