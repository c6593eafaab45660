"""Turning a batch's outcomes, gathered in any order, into the serial runner's `RunResult`.

Parallel runners produce each executed transaction's outcome where it ran. They carry it as a
*packed* tuple of plain values (which pickle and unpickle an order of magnitude faster than
dataclass instances):

- a rejection: `(position, reason, detail)`;
- an applied transaction: `(position, changes, result payloads)`, each change either
  `(table, key, before, after)` or, for a deferred row, `(table, key, delta, low, high, True)`,
  replaced here by its settled `Change`.

`assemble` walks the batch in order and builds exactly the objects the serial runner builds,
replaying every change on the initial state to get the final one (building its records as the
serial runner does: `core.records.record`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ledger_engine.core.records import (
    APPLIED,
    DUPLICATE,
    REJECTED,
    Change,
    Duplicate,
    Event,
    Outcome,
    Rejection,
    Result,
    RunResult,
    record,
)
from ledger_engine.runtime.parallel.bins import Executed

Packed = tuple


def pack(item: Executed) -> Packed:
    """The packed form of an executed transaction (see the module docstring)."""
    outcome = item.outcome
    if type(outcome) is Rejection:
        return (item.position, outcome.reason, outcome.detail)
    changes = tuple(
        [
            c[1:]  # (table, key, before, after): a slice of a named tuple is a plain tuple
            if type(c) is Change
            else (c.table, c.key, c.delta, c.low, c.high, True)
            for c in outcome.changes
        ]
    )
    return (item.position, changes, tuple([r.payload for r in outcome.results]))


def assemble(
    batch: Sequence[Event],
    start: Mapping[str, Mapping[Any, Any]],
    verdicts: Sequence[Rejection | Duplicate | None],
    packed: Mapping[int, Packed],
    settled: Mapping[tuple[int, int], Change],
) -> RunResult:
    """The `RunResult` of a batch.

    `verdicts[p]` is the admission of position `p`: a `Rejection` or `Duplicate` for an event
    that did not run, `None` for one that ran, whose packed outcome is `packed[p]`. `settled`
    holds the change of every pending add by (position, seq).
    """
    state = {name: dict(rows) for name, rows in start.items()}
    result = RunResult(state=state)
    changes, results, outcomes = result.changes, result.results, result.outcomes
    for position, (event, verdict) in enumerate(zip(batch, verdicts, strict=True)):
        rid = event.request_id
        if verdict is None:
            outcome = packed[position]
            if type(outcome[1]) is str:
                result.rejections.append(Rejection(event.stream, rid, outcome[1], outcome[2]))
                status = REJECTED
            else:
                for seq, packed_change in enumerate(outcome[1]):
                    if len(packed_change) == 4:
                        table, key, before, after = packed_change
                        change = record(Change, (rid, table, key, before, after))
                    else:
                        change = settled[(position, seq)]
                        _, table, key, _, after = change
                    changes.append(change)
                    if after is None:
                        state[table].pop(key, None)
                    else:
                        state[table][key] = after
                stream = event.stream
                results.extend([record(Result, (stream, rid, payload)) for payload in outcome[2]])
                status = APPLIED
        elif type(verdict) is Rejection:
            result.rejections.append(verdict)
            status = REJECTED
        else:
            assert type(verdict) is Duplicate, f"unexpected verdict {verdict!r}"
            result.duplicates.append(verdict)
            status = DUPLICATE
        outcomes.append(record(Outcome, (position, rid, status)))
    return result
