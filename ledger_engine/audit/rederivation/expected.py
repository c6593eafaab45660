"""What the serial runner says every line of committed batches must have left in the store.

The lines come from the inbox files (`oracle.py`) or from the stored event log (`replay.py`),
in (batch, position) order, in chunks, which `serial.SerialRun` runs one after another as one
serial run; `expected_records` turns each line and the end of its event into the records the
store must hold, in the shape `stored_log` reads them in: the event log's columns and the
rejection or duplicate (`LineRecord`), change-log rows (`ChangeRecord`) and results
(`ResultRecord`). Values are in their stored form (`stored_form.jsonb_form`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ledger_engine.audit.rederivation.stored_form import (
    jsonb_form,
    stored_event,
    stored_request_id,
    stored_text,
)
from ledger_engine.core.ingest import IngestedLine
from ledger_engine.core.records import (
    APPLIED,
    DUPLICATE,
    INVALID_EVENT,
    REJECTED,
    Change,
    Duplicate,
    Event,
    Rejection,
    Result,
    RunResult,
)
from ledger_engine.core.storable import key_text

Place = tuple[int, int]  # (batch id, position in the batch)


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a committed batch, as it is re-executed: its event, or why it holds none.

    `exact` is False when the event was rebuilt from the event log's columns (no bytes of the
    line are kept), which hold its stored form only (`stored_form`).
    """

    batch_id: int
    position: int
    source_file: str
    line_number: int
    raw: bytes | None
    event: Event | None
    problem: str | None = None
    exact: bool = True


def file_line(batch_id: int, line: IngestedLine) -> Line:
    """A line of an inbox file (`ingest.ingest_files`) of batch `batch_id`."""
    return Line(
        batch_id,
        line.position,
        line.source_file,
        line.line_number,
        line.raw,
        line.event,
        line.problem,
    )


@dataclass(frozen=True, slots=True)
class LineRecord:
    """What became of one line, in the shape the store keeps it: the event log's columns, the
    rejection's (reason, detail, raw bytes) or the duplicate's kind, the stream and request id
    that the rejection or duplicate row repeats (`ended_*`), and the executed request's row."""

    batch_id: int
    position: int
    source_file: str
    line_number: int
    outcome: str
    stream: str | None
    request_id: str | None
    payload: Any  # stored form (`jsonb_form`); None for NULL
    reason: str | None = None
    detail: str | None = None
    raw: bytes | None = None
    kind: str | None = None
    ended_stream: str | None = None
    ended_request_id: str | None = None
    # The executed request's row (`ledger_requests`) of an applied or rejected event with a
    # valid request id: (request id, fingerprint of the event, outcome).
    request: tuple[str, str, str] | None = None

    @property
    def place(self) -> Place:
        return (self.batch_id, self.position)


class ChangeRecord(NamedTuple):
    """One change-log row."""

    batch_id: int
    position: int
    seq: int
    request_id: str
    table: str
    key: str
    before: Any
    after: Any


class ResultRecord(NamedTuple):
    """One result row."""

    batch_id: int
    position: int
    seq: int
    stream: str
    request_id: str
    payload: Any


@dataclass(frozen=True, slots=True)
class EventEnd:
    """What one event of a run became: its status, its rejection or duplicate, and (applied)
    its row writes and results."""

    status: str
    ended: Rejection | Duplicate | None = None
    changes: Sequence[Change] = ()
    results: Sequence[Result] = ()


def event_ends(run: RunResult) -> Iterator[EventEnd]:
    """Each event's end, in the run's order.

    An applied event's changes and results are the next ones that carry its request id: an
    executed request id is unique within a run, so consecutive applied events never share one.
    """
    rejections, duplicates = iter(run.rejections), iter(run.duplicates)
    changes, results = run.changes, run.results
    next_change = next_result = 0
    for outcome in run.outcomes:
        if outcome.status == REJECTED:
            yield EventEnd(REJECTED, next(rejections))
        elif outcome.status == DUPLICATE:
            yield EventEnd(DUPLICATE, next(duplicates))
        else:
            first_change, first_result = next_change, next_result
            while (
                next_change < len(changes) and changes[next_change].request_id == outcome.request_id
            ):
                next_change += 1
            while (
                next_result < len(results) and results[next_result].request_id == outcome.request_id
            ):
                next_result += 1
            yield EventEnd(
                APPLIED,
                None,
                changes[first_change:next_change],
                results[first_result:next_result],
            )
    assert next_change == len(changes) and next_result == len(results), "every write ends"


@dataclass
class Expected:
    """What a chunk of lines must have become."""

    lines: list[LineRecord] = field(default_factory=list)
    changes: list[ChangeRecord] = field(default_factory=list)
    results: list[ResultRecord] = field(default_factory=list)


def expected_records(lines: Iterable[Line], ends: Iterable[EventEnd]) -> Expected:
    """The records `lines` must have left, given the ends of their events (in order)."""
    expected = Expected()
    ends = iter(ends)
    for line in lines:
        where = (line.batch_id, line.position, line.source_file, line.line_number)
        if line.event is None:
            expected.lines.append(
                LineRecord(
                    *where, REJECTED, None, None, None, INVALID_EVENT, line.problem, line.raw
                )
            )
            continue
        if line.exact:
            columns = stored_event(line.event)
        else:  # rebuilt from the columns: they are its stored form
            columns = (line.event.stream, line.event.request_id, line.event.payload)
        end = next(ends)
        ended = end.ended
        request = _executed(line.event, end.status)
        if isinstance(ended, Rejection):
            stream, request_id = stored_text(ended.stream), stored_request_id(ended.request_id)
            kept = LineRecord(
                *where,
                REJECTED,
                *columns,
                ended.reason,
                ended.detail,
                line.raw,
                ended_stream=stream,
                ended_request_id=request_id,
                request=request,
            )
        elif isinstance(ended, Duplicate):
            kept = LineRecord(
                *where,
                DUPLICATE,
                *columns,
                kind=ended.kind,
                ended_stream=stored_text(ended.stream),
                ended_request_id=ended.request_id,
            )
        else:
            kept = LineRecord(*where, APPLIED, *columns, request=request)
            _applied_records(expected, line, end)
        expected.lines.append(kept)
    assert next(ends, None) is None, "one end per event"
    return expected


def _applied_records(expected: Expected, line: Line, end: EventEnd) -> None:
    """The change-log and result rows an applied event leaves, appended to `expected`."""
    for seq, change in enumerate(end.changes):
        expected.changes.append(
            ChangeRecord(
                line.batch_id,
                line.position,
                seq,
                change.request_id,
                change.table,
                key_text(change.key),
                jsonb_form(change.before),
                jsonb_form(change.after),
            )
        )
    for seq, result in enumerate(end.results):
        expected.results.append(
            ResultRecord(
                line.batch_id,
                line.position,
                seq,
                result.stream,
                result.request_id,
                jsonb_form(result.payload),
            )
        )


def _executed(event: Event, status: str) -> tuple[str, str, str] | None:
    """The executed request's row an event leaves: the fingerprint of the event itself (a
    `StoredFormEvent`'s too, not of its stored form), as admission took it."""
    request_id = stored_request_id(event.request_id)
    if status == DUPLICATE or request_id is None:
        return None
    return (request_id, Event.fingerprint(event), status)
