"""A micro-batch's outcome, line by line: what the commit writes to the system of record."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from ledger_engine.api import StreamingLedger
from ledger_engine.ingest import IngestedLine
from ledger_engine.model import (
    INVALID_EVENT,
    Change,
    Duplicate,
    Event,
    Rejection,
    Result,
    RunResult,
)
from ledger_engine.transaction import resolve_keys
from ledger_engine.values import Problem

APPLIED, REJECTED, DUPLICATE = "applied", "rejected", "duplicate"


@dataclass(frozen=True)
class LineOutcome:
    """What became of one ingested line."""

    line: IngestedLine
    status: str
    rejection: Rejection | None = None
    duplicate: Duplicate | None = None
    changes: tuple[Change, ...] = ()
    results: tuple[Result, ...] = ()

    def __post_init__(self) -> None:
        assert self.status in (APPLIED, REJECTED, DUPLICATE), self.status
        assert (self.status == REJECTED) == (self.rejection is not None)
        assert (self.status == DUPLICATE) == (self.duplicate is not None)
        assert self.status == APPLIED or not (self.changes or self.results)


@dataclass(frozen=True)
class BatchRecord:
    """Everything one micro-batch commits, in batch order."""

    batch_id: int
    ledger: str
    input_files: tuple[str, ...]
    input_fingerprint: str
    outcomes: tuple[LineOutcome, ...]
    execute_seconds: float

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    def net_changes(self) -> dict[tuple[str, Any], tuple[Any, Any]]:
        """(table, key) -> (value before the batch, value after it), for every row written."""
        net: dict[tuple[str, Any], tuple[Any, Any]] = {}
        for outcome in self.outcomes:
            for change in outcome.changes:
                row = (change.table, change.key)
                before = net[row][0] if row in net else change.before
                net[row] = (before, change.after)
        return net


def runnable_events(lines: list[IngestedLine]) -> list[Event]:
    """The events the runner executes: every line that parsed, in batch order."""
    return [line.event for line in lines if line.event is not None]


def touched_keys(ledger: StreamingLedger, events: list[Event]) -> dict[str, set[Any]]:
    """Per table, every key some event's bindings name: the rows a run needs loaded."""
    streams = ledger.streams
    keys: dict[str, set[Any]] = defaultdict(set)
    for event in events:
        stream = streams.get(event.stream) if isinstance(event.stream, str) else None
        if stream is None or not isinstance(event.payload, dict):
            continue
        resolved = resolve_keys(stream, event.payload)
        if isinstance(resolved, Problem):
            continue
        for binding, key in zip(stream.bindings, resolved, strict=True):
            keys[binding.table.name].add(key)
    return dict(keys)


def line_outcomes(lines: list[IngestedLine], run: RunResult) -> tuple[LineOutcome, ...]:
    """Join the run's outcomes (over `runnable_events(lines)`) back onto the lines."""
    parsed = [line for line in lines if line.event is not None]
    assert len(run.outcomes) == len(parsed), "the run must account for every parsed event"
    rejections = iter(run.rejections)
    duplicates = iter(run.duplicates)
    changes: dict[str, list[Change]] = defaultdict(list)
    for change in run.changes:
        changes[change.request_id].append(change)
    results: dict[str, list[Result]] = defaultdict(list)
    for result in run.results:
        results[result.request_id].append(result)

    by_position: dict[int, LineOutcome] = {}
    for line, outcome in zip(parsed, run.outcomes, strict=True):
        if outcome.status == APPLIED:
            rid = outcome.request_id
            by_position[line.position] = LineOutcome(
                line,
                APPLIED,
                changes=tuple(changes.pop(rid, ())),
                results=tuple(results.pop(rid, ())),
            )
        elif outcome.status == REJECTED:
            by_position[line.position] = LineOutcome(line, REJECTED, rejection=next(rejections))
        else:
            by_position[line.position] = LineOutcome(line, DUPLICATE, duplicate=next(duplicates))
    assert next(rejections, None) is None and next(duplicates, None) is None
    assert not changes and not results, "every change and result belongs to an applied event"

    outcomes = []
    for line in lines:
        if line.event is None:
            assert line.problem is not None
            rejection = Rejection(None, None, INVALID_EVENT, line.problem)
            outcomes.append(LineOutcome(line, REJECTED, rejection=rejection))
        else:
            outcomes.append(by_position[line.position])
    return tuple(outcomes)
