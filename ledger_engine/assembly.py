"""Turning a batch's outcomes, gathered in any order, into the serial runner's `RunResult`.

Parallel runners produce each executed transaction's outcome where it ran. They carry it as a
*packed* tuple of plain values (which pickle and unpickle an order of magnitude faster than
dataclass instances):

- a rejection: `(position, reason, detail)`;
- an applied transaction: `(position, changes, result payloads)`, each change either
  `(table, key, before, after)` or, for a deferred row, `(table, key, delta, low, high, True)`,
  replaced here by its settled `Change`.

`assemble` walks the batch in order and builds exactly the objects the serial runner builds,
replaying every change on the initial state to get the final one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ledger_engine.model import (
    Change,
    Duplicate,
    Event,
    Outcome,
    Rejection,
    Result,
    RunResult,
)
from ledger_engine.partition import Executed

Packed = tuple


def pack(item: Executed) -> Packed:
    """The packed form of an executed transaction (see the module docstring)."""
    outcome = item.outcome
    if isinstance(outcome, Rejection):
        return (item.position, outcome.reason, outcome.detail)
    changes = tuple(
        (c.table, c.key, c.before, c.after)
        if isinstance(c, Change)
        else (c.table, c.key, c.delta, c.low, c.high, True)
        for c in outcome.changes
    )
    return (item.position, changes, tuple(r.payload for r in outcome.results))


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
            if isinstance(outcome[1], str):
                result.rejections.append(Rejection(event.stream, rid, outcome[1], outcome[2]))
                status = "rejected"
            else:
                for seq, c in enumerate(outcome[1]):
                    change = Change(rid, *c) if len(c) == 4 else settled[(position, seq)]
                    changes.append(change)
                    rows = state[change.table]
                    if change.after is None:
                        rows.pop(change.key, None)
                    else:
                        rows[change.key] = change.after
                stream = event.stream
                results.extend(Result(stream, rid, payload) for payload in outcome[2])
                status = "applied"
        elif isinstance(verdict, Rejection):
            result.rejections.append(verdict)
            status = "rejected"
        else:
            assert isinstance(verdict, Duplicate), f"unexpected verdict {verdict!r}"
            result.duplicates.append(verdict)
            status = "duplicate"
        outcomes.append(Outcome(position, rid, status))
    return result
