"""Re-deriving committed batches with the serial runner, and comparing them with PostgreSQL.

Two audits re-derive the ledger: the oracle (`oracle.py`) from the inbox files the batches took
in, the replay (`replay.py`) from the stored event log. Each hands this module the lines of the
committed batches in (batch, position) order, in chunks. `Rederivation` runs each chunk with the
serial runner, chained: a chunk starts from the state and the request ids the chunks before it
left (`ChainedRun`), which gives what one run over every line gives. It then compares, chunk by
chunk, what every line must have become with what the store holds, and at the end every
table's state and every batch row's counts:

- event outcomes: applied, rejected or duplicate, per (batch, position);
- event log: the stored event's file, line, stream, request id and payload agree with its line;
- rejections: reason, detail, raw bytes, stream and request id;
- duplicates: kind, stream and request id;
- change log and results: per (batch, position, seq), values compared as JSON (`same_json`);
- batch counts: each batch row's counts, and batch ids 0..n-1;
- table <name>: every row, by key.

The store is read through one snapshot (`StoredLog`: server-side cursors in one REPEATABLE
READ transaction, read in step with the chunks), so memory holds one chunk's lines and rows,
the tables' state and one fingerprint per executed request id, never the whole log.

Values are compared in the form `jsonb` reads them back in (`stored_form.jsonb_form`), the only
form both sides share: the store cannot say whether a result's 1e+300 was a float.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sqlalchemy import Connection, Engine, text

from ledger_engine.api import StreamingLedger
from ledger_engine.gc_pause import gc_paused
from ledger_engine.ingest import IngestedLine
from ledger_engine.model import (
    APPLIED,
    DUPLICATE,
    EXISTS,
    EXISTS_WITH_DIFFERENT_PAYLOAD,
    INVALID_EVENT,
    REJECTED,
    Change,
    Duplicate,
    Event,
    Rejection,
    Result,
    RunResult,
)
from ledger_engine.serial import State, initial_state, record, run_event
from ledger_engine.store.staging import clean_text, request_id_of
from ledger_engine.store.state import snapshot_rows
from ledger_engine.values import brief, key_text

from .stored_form import ambiguous, jsonb_form, same_json, stored_event

Place = tuple[int, int]  # (batch id, position in the batch)
SHOWN = 10  # findings listed per check; a last line counts the rest
LINE_CHECKS = ("event outcomes", "event log", "rejections", "duplicates")
CHECKS = (*LINE_CHECKS, "change log", "results", "batch counts")


# -- what the store keeps, and what it must keep --------------------------------------------


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
    rejection's (reason, detail, raw bytes) or the duplicate's kind, and the stream and request
    id that the rejection or duplicate row repeats (`ended_*`)."""

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
        if isinstance(ended, Rejection):
            stream, request_id = clean_text(ended.stream), request_id_of(ended.request_id)
            record = LineRecord(
                *where,
                REJECTED,
                *columns,
                ended.reason,
                ended.detail,
                line.raw,
                ended_stream=stream,
                ended_request_id=request_id,
            )
        elif isinstance(ended, Duplicate):
            record = LineRecord(
                *where,
                DUPLICATE,
                *columns,
                kind=ended.kind,
                ended_stream=clean_text(ended.stream),
                ended_request_id=ended.request_id,
            )
        else:
            record = LineRecord(*where, APPLIED, *columns)
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
        expected.lines.append(record)
    assert next(ends, None) is None, "one end per event"
    return expected


# -- running chunks in a chain ---------------------------------------------------------------


class ChainedRun:
    """The serial runner over consecutive chunks of events: together, exactly one run over all
    of them (a property test checks it against `run_serial`).

    It runs the serial runner's own step (`serial.run_event`, recorded by `serial.record`) on
    one state and one map of seen request ids kept from chunk to chunk. Chaining `run_serial`
    calls through their `state` and `known_requests` gives the same, but each call copies and
    checks its whole initial state: a cost in table rows per chunk, as large as the replay
    itself for a ledger of 10^6 rows.
    """

    def __init__(self, ledger: StreamingLedger) -> None:
        ledger.check()
        self.streams = ledger.streams
        self.state: State = initial_state(ledger, None)
        self.seen: dict[str, str] = {}  # request id -> fingerprint of its executed event

    def run(self, events: Sequence[Event]) -> RunResult:
        """Run the next chunk; its `RunResult` (positions from 0) shares the chain's state."""
        result = RunResult(state=self.state)
        with gc_paused():
            for position, event in enumerate(events):
                outcome = run_event(self.streams, event, self.state, self.seen)
                record(result, position, event, outcome)
        return result


# -- reading the store in step with the chunks ------------------------------------------------

MAX_POSITION = 2**31 - 1  # positions are PostgreSQL integers


@contextmanager
def read_snapshot(engine: Engine) -> Iterator[Connection]:
    """A read-only connection whose reads all see one snapshot of the store, however long
    they take and whatever commits meanwhile."""
    with engine.connect() as conn:
        conn.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
        with conn.begin():
            yield conn


_LINES = (
    "SELECT e.batch_id, e.position, e.source_file, e.line_number, e.outcome, e.stream,"
    " e.request_id, e.payload, r.reason, r.detail, r.raw_input, d.kind,"
    " coalesce(r.stream, d.stream), coalesce(r.request_id, d.request_id)"
    " FROM ledger_events e"
    " LEFT JOIN ledger_rejections r USING (batch_id, position)"
    " LEFT JOIN ledger_duplicates d USING (batch_id, position)"
)
_CHANGES = (
    "SELECT batch_id, position, seq, request_id, table_name, key, before, after"
    " FROM ledger_change_log"
)
_RESULTS = "SELECT batch_id, position, seq, stream, request_id, payload FROM ledger_results"
_ONE_BATCH = " WHERE batch_id = %(batch)s"
_LINES_OF_ONE_BATCH = " WHERE e.batch_id = %(batch)s"
_LINE_ORDER = " ORDER BY e.batch_id, e.position"
_ROW_ORDER = " ORDER BY batch_id, position, seq"


def _line_record(row: tuple) -> LineRecord:
    *head, raw, kind, ended_stream, ended_request_id = row
    raw = None if raw is None else bytes(raw)
    return LineRecord(*head, raw, kind, ended_stream, ended_request_id)


class _Rows:
    """A server-side cursor's rows, taken in (batch, position) order up to a place."""

    def __init__(self, conn: Connection, name: str, query: str, params: dict) -> None:
        # A named cursor streams the rows instead of loading them whole.
        self._cursor = conn.connection.cursor(name=name)
        self._cursor.itersize = 5_000
        self._cursor.execute(query, params)
        self._rows = iter(self._cursor)
        self._next = next(self._rows, None)

    @property
    def exhausted(self) -> bool:
        return self._next is None

    def take(self, count: int) -> list[tuple]:
        """The next `count` rows (fewer at the end)."""
        taken = []
        while self._next is not None and len(taken) < count:
            taken.append(self._next)
            self._next = next(self._rows, None)
        return taken

    def through(self, end: Place | None) -> list[tuple]:
        """The next rows up to and including place `end` (all that are left for None)."""
        taken = []
        while self._next is not None and (end is None or (self._next[0], self._next[1]) <= end):
            taken.append(self._next)
            self._next = next(self._rows, None)
        return taken

    def close(self) -> None:
        self._cursor.close()


class StoredLog:
    """The committed event log, change log and results, read in (batch, position) order.

    `conn` must be in a transaction that sees one snapshot (REPEATABLE READ): the three
    cursors and the tables read at the end must agree. `batch_id` restricts it to one batch.
    """

    def __init__(self, conn: Connection, batch_id: int | None = None) -> None:
        params = {} if batch_id is None else {"batch": batch_id}
        where, line_where = ("", "") if batch_id is None else (_ONE_BATCH, _LINES_OF_ONE_BATCH)
        self._lines = _Rows(conn, "replay_lines", _LINES + line_where + _LINE_ORDER, params)
        self._changes = _Rows(conn, "replay_changes", _CHANGES + where + _ROW_ORDER, params)
        self._results = _Rows(conn, "replay_results", _RESULTS + where + _ROW_ORDER, params)

    def next_lines(self, count: int) -> tuple[list[LineRecord], Place | None]:
        """The next `count` stored lines, and the place the chunk they make ends at: the last
        one's, or None when no line is left (the chunk then takes every row left)."""
        records = [_line_record(row) for row in self._lines.take(count)]
        end = None if self._lines.exhausted else records[-1].place
        return records, end

    @property
    def exhausted(self) -> bool:
        """True once every stored line is taken."""
        return self._lines.exhausted

    def lines_through(self, end: Place | None) -> list[LineRecord]:
        return [_line_record(row) for row in self._lines.through(end)]

    def changes_through(self, end: Place | None) -> list[ChangeRecord]:
        return [ChangeRecord(*row) for row in self._changes.through(end)]

    def results_through(self, end: Place | None) -> list[ResultRecord]:
        return [ResultRecord(*row) for row in self._results.through(end)]

    def close(self) -> None:
        for rows in (self._lines, self._changes, self._results):
            rows.close()


class BatchRow(NamedTuple):
    batch_id: int
    ingested: int
    applied: int
    rejected: int
    duplicates: int
    changes: int
    results: int


def batch_rows(conn: Connection) -> list[BatchRow]:
    """Every batch row's counts, in batch order."""
    rows = conn.execute(
        text(
            "SELECT batch_id, events_ingested, applied, rejected, duplicates, changes, results"
            " FROM ledger_batches ORDER BY batch_id"
        )
    )
    return [BatchRow(*row) for row in rows]


# -- comparing -------------------------------------------------------------------------------


@dataclass
class Tally:
    """The differences one check found: how many, and the first `SHOWN` in plain words."""

    count: int = 0
    shown: list[str] = field(default_factory=list)

    def add(self, finding: str) -> None:
        self.count += 1
        if len(self.shown) < SHOWN:
            self.shown.append(finding)

    def findings(self) -> list[str]:
        more = self.count - len(self.shown)
        return self.shown + ([f"... and {more} more difference(s)"] if more else [])


_MISSING = object()


def _merge(
    expected: Iterable[tuple[Any, Any]], stored: Iterable[tuple[Any, Any]]
) -> Iterator[tuple[Any, Any, Any]]:
    """(key, expected, stored) of two key-sorted sequences, `_MISSING` where a side lacks it."""
    want, got = iter(expected), iter(stored)
    w, g = next(want, None), next(got, None)
    while w is not None or g is not None:
        if g is None or (w is not None and w[0] < g[0]):
            yield w[0], w[1], _MISSING
            w = next(want, None)
        elif w is None or g[0] < w[0]:
            yield g[0], _MISSING, g[1]
            g = next(got, None)
        else:
            yield w[0], w[1], g[1]
            w, g = next(want, None), next(got, None)


_ABSENT = object()  # a field one side's object lacks


def _show(value: Any) -> str:
    if value is _ABSENT:
        return "nothing"
    return "NULL" if value is None else brief(value, 60)


def _at(batch_id: int, position: int, request_id: Any = None) -> str:
    where = f"batch {batch_id} position {position}"
    return where + (f" (request {brief(request_id, 40)})" if request_id else "")


def _outcome_words(record: LineRecord) -> str:
    if record.outcome == REJECTED:
        return f"rejected ({record.reason})"
    if record.outcome == DUPLICATE:
        return f"duplicate ({record.kind})"
    return record.outcome


LISTED_FIELDS = 4  # differing fields named per finding


def _field_differences(
    names: Sequence[str], want: Sequence, got: Sequence, gives: str = "the serial runner gives"
) -> str:
    """The fields that differ, in words ("" if none): objects field by field, by path."""
    parts = [
        f"{path} stored {_show(g)}, {gives} {_show(w)}"
        for name, w, g in zip(names, want, got, strict=True)
        if not same_json(w, g)
        for path, w, g in _leaves(name, w, g)
    ]
    more = len(parts) - LISTED_FIELDS
    return "; ".join(parts[:LISTED_FIELDS]) + (f"; and {more} more field(s)" if more > 0 else "")


def _leaves(path: str, want: Any, got: Any) -> Iterator[tuple[str, Any, Any]]:
    """(path, want, got) of the differing values within two JSON values."""
    if type(want) is not dict or type(got) is not dict:
        yield path, want, got
        return
    for key in sorted(want.keys() | got.keys()):
        w, g = want.get(key, _ABSENT), got.get(key, _ABSENT)
        if w is _ABSENT or g is _ABSENT or not same_json(w, g):
            yield from _leaves(f"{path}.{key}", w, g)


class Rederivation:
    """The serial runner over the chunks of a committed ledger, compared with the store."""

    def __init__(self, ledger: StreamingLedger, log: StoredLog) -> None:
        self.ledger = ledger
        self.log = log
        self.chained = ChainedRun(ledger)
        self.tallies: dict[str, Tally] = {name: Tally() for name in CHECKS}
        for name in sorted(ledger.tables):
            self.tallies[f"table {name}"] = Tally()
        self.lines_done = 0
        # Per batch: [ingested, applied, rejected, duplicates, changes, results].
        self._counts: dict[int, list[int]] = {}

    @property
    def differences(self) -> int:
        return sum(t.count for t in self.tallies.values())

    def chunk(self, lines: Sequence[Line], stored: Sequence[LineRecord], end: Place | None) -> None:
        """Re-execute `lines` after those before them, and compare with what the store holds
        up to place `end` (`stored`: its lines there)."""
        run = self.chained.run([line.event for line in lines if line.event is not None])
        expected = expected_records(lines, event_ends(run))
        self._compare_lines(lines, expected.lines, stored)
        self._compare_rows("change log", expected.changes, self.log.changes_through(end))
        self._compare_rows("results", expected.results, self.log.results_through(end))
        self._count(expected)
        self.lines_done += len(lines)

    def finish(
        self,
        conn: Connection,
        batches: Sequence[BatchRow],
        on_table: Callable[[str], None] | None = None,
    ) -> dict[str, Tally]:
        """Compare what no chunk took, every table and the batch rows; the tallies by check."""
        self._compare_lines([], [], self.log.lines_through(None))
        self._compare_rows("change log", [], self.log.changes_through(None))
        self._compare_rows("results", [], self.log.results_through(None))
        self._compare_batches(batches)
        for name, table in sorted(self.ledger.tables.items()):
            if on_table is not None:
                on_table(name)
            self._compare_table(name, self.chained.state[name], snapshot_rows(conn, table))
        return self.tallies

    # -- lines --

    def _compare_lines(
        self, lines: Sequence[Line], expected: Sequence[LineRecord], stored: Sequence[LineRecord]
    ) -> None:
        exact = {(line.batch_id, line.position): line.exact for line in lines}
        outcomes = self.tallies["event outcomes"]
        merged = _merge(((r.place, r) for r in expected), ((r.place, r) for r in stored))
        for (batch_id, position), want, got in merged:
            if got is _MISSING:
                outcomes.add(
                    f"{_at(batch_id, position, want.request_id)}: not in the store; the serial"
                    f" runner gives {_outcome_words(want)}"
                )
            elif want is _MISSING:
                outcomes.add(
                    f"{_at(batch_id, position, got.request_id)}: the store holds an event"
                    f" ({_outcome_words(got)}) that no committed line gives"
                )
            elif want.outcome != got.outcome:
                outcomes.add(
                    f"{_at(batch_id, position, got.request_id)}: stored {_outcome_words(got)},"
                    f" the serial runner gives {_outcome_words(want)}"
                )
            else:
                self._compare_line(want, got, exact[batch_id, position])

    def _compare_line(self, want: LineRecord, got: LineRecord, exact: bool) -> None:
        at = _at(got.batch_id, got.position, got.request_id)
        names = ("source file", "line number", "stream", "request id", "payload")
        fields = (
            (want.source_file, want.line_number, want.stream, want.request_id, want.payload),
            (got.source_file, got.line_number, got.stream, got.request_id, got.payload),
        )
        found = _field_differences(names, *fields, gives="its line gives")
        if found:
            self.tallies["event log"].add(f"{at}: {found}")
        if want.outcome == REJECTED:
            names = ("reason", "detail", "raw input", "rejection's stream", "rejection's request")
            found = _field_differences(
                names,
                (want.reason, want.detail, want.raw, want.ended_stream, want.ended_request_id),
                (got.reason, got.detail, got.raw, got.ended_stream, got.ended_request_id),
            )
            if found:
                self.tallies["rejections"].add(f"{at}: {found}")
        elif want.outcome == DUPLICATE:
            if not exact and _undecidable(want, got):
                return
            names = ("kind", "duplicate's stream", "duplicate's request")
            found = _field_differences(
                names,
                (want.kind, want.ended_stream, want.ended_request_id),
                (got.kind, got.ended_stream, got.ended_request_id),
            )
            if found:
                self.tallies["duplicates"].add(f"{at}: {found}")

    # -- change log, results, batches, tables --

    def _compare_rows(
        self,
        name: str,
        expected: Sequence[ChangeRecord | ResultRecord],
        stored: Sequence[ChangeRecord | ResultRecord],
    ) -> None:
        tally = self.tallies[name]
        for (batch_id, position, seq), want, got in _merge(
            ((row[:3], row) for row in expected), ((row[:3], row) for row in stored)
        ):
            row = got if want is _MISSING else want
            at = f"{_at(batch_id, position, row.request_id)} seq {seq}"
            if isinstance(row, ChangeRecord):
                at += f" ({row.table} {brief(row.key, 40)})"
            if got is _MISSING:
                tally.add(f"{at}: not in the store; the serial runner gives {_row_words(want)}")
            elif want is _MISSING:
                tally.add(f"{at}: stored {_row_words(got)}, which the serial runner does not give")
            else:
                found = _field_differences(want._fields[3:], want[3:], got[3:])
                if found:
                    tally.add(f"{at}: {found}")

    def _count(self, expected: Expected) -> None:
        index = {APPLIED: 1, REJECTED: 2, DUPLICATE: 3}
        for line in expected.lines:
            counts = self._counts.setdefault(line.batch_id, [0] * 6)
            counts[0] += 1
            counts[index[line.outcome]] += 1
        for column, rows in ((4, expected.changes), (5, expected.results)):
            for row in rows:
                self._counts.setdefault(row.batch_id, [0] * 6)[column] += 1

    def _compare_batches(self, batches: Sequence[BatchRow]) -> None:
        tally = self.tallies["batch counts"]
        ids = [row.batch_id for row in batches]
        if ids != list(range(len(ids))):
            tally.add(f"batch ids are not 0..{len(ids) - 1}: {brief(ids, 80)}")
        want = sorted(self._counts.items())
        got = [(row.batch_id, list(row[1:])) for row in batches]
        for batch_id, counts, row in _merge(want, got):
            if row is _MISSING:
                tally.add(f"batch {batch_id}: no batch row in the store")
                continue
            counts = [0] * 6 if counts is _MISSING else counts
            found = _field_differences(BatchRow._fields[1:], counts, row)
            if found:
                tally.add(f"batch {batch_id}: {found}")

    def _compare_table(self, name: str, state: dict[Any, Any], stored: Iterable[tuple]) -> None:
        tally = self.tallies[f"table {name}"]
        want = ((key, jsonb_form(value)) for key, value in sorted(state.items()))
        for key, w, g in _merge(want, stored):
            at = f"{name} {brief(key, 60)}"
            if g is _MISSING:
                tally.add(f"{at}: not in the store; the serial runner gives {_show(w)}")
            elif w is _MISSING:
                tally.add(f"{at}: stored {_show(g)}, a row the serial runner does not have")
            elif not same_json(w, g):
                tally.add(f"{at}: stored {_show(g)}, the serial runner gives {_show(w)}")


def _row_words(row: ChangeRecord | ResultRecord) -> str:
    if isinstance(row, ChangeRecord):
        return f"before {_show(row.before)}, after {_show(row.after)}"
    return f"{row.stream} result {_show(row.payload)}"


def _undecidable(want: LineRecord, got: LineRecord) -> bool:
    """A duplicate rebuilt from the event log's columns whose kind the store cannot decide: the
    serial runner finds its stored form equal to the first event's, but the store says the
    payloads differed, and this stored form may stand for more than one event (the store
    keeps no bytes of a duplicate's line)."""
    return (
        want.kind == EXISTS
        and got.kind == EXISTS_WITH_DIFFERENT_PAYLOAD
        and ambiguous(got.stream, got.payload)
    )
