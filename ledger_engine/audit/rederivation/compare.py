"""Re-deriving committed batches with the serial runner, and comparing them with PostgreSQL.

Two audits re-derive the ledger: the oracle (`oracle.py`) from the inbox files the batches took
in, the replay (`replay.py`) from the stored event log. Each hands `Rederivation` the lines of
the committed batches in (batch, position) order, in chunks. It runs each chunk with the serial
runner, chained: a chunk starts from the state and the request ids the chunks before it left
(`serial.SerialRun`), which gives what one run over every line gives. It then compares,
chunk by chunk, what every line must have become (`expected`) with what the store holds
(`stored_log`), and at the end every table's state and every batch row's counts:

- event outcomes: applied, rejected or duplicate, per (batch, position);
- event log: the stored event's file, line, stream, request id and payload agree with its line;
- rejections: reason, detail, raw bytes, stream and request id;
- duplicates: kind, stream and request id;
- executed requests: each applied or rejected event's row in `ledger_requests` (request id,
  outcome, fingerprint of the event as it was executed): the stored event is that event;
- change log and results: per (batch, position, seq), values compared as JSON (`same_json`);
- batch counts: each batch row's counts, and batch ids 0..n-1;
- table <name>: every row, by key.

The store is read in one consistent read, in step with the chunks, so memory holds one chunk's
lines and rows, the tables' state and one fingerprint per executed request id, never the whole
log. Each check counts its differences and words the first `SHOWN`, naming batch, position,
request, table and key.

Values are compared in the form `jsonb` reads them back in (`stored_form.jsonb_form`), the only
form both sides share: the store cannot say whether a result's 1e+300 was a float.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection

from ledger_engine.audit.rederivation.expected import (
    ChangeRecord,
    Expected,
    Line,
    LineRecord,
    Place,
    ResultRecord,
    event_ends,
    expected_records,
)
from ledger_engine.audit.rederivation.stored_form import ambiguous, jsonb_form, same_json
from ledger_engine.audit.rederivation.stored_log import BatchRow, StoredLog
from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.core.records import (
    APPLIED,
    DUPLICATE,
    EXISTS,
    EXISTS_WITH_DIFFERENT_PAYLOAD,
    REJECTED,
)
from ledger_engine.core.storable import brief
from ledger_engine.runtime.serial import SerialRun
from ledger_engine.store.state import state_rows

SHOWN = 10  # findings listed per check; a last line counts the rest
LINE_CHECKS = ("event outcomes", "event log", "rejections", "duplicates", "executed requests")
CHECKS = (*LINE_CHECKS, "change log", "results", "batch counts")


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
        self.chained = SerialRun(ledger)
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
            self._compare_table(name, self.chained.state[name], state_rows(conn, table))
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
        if want.request != got.request and (exact or not _fingerprint_undecidable(want, got)):
            self.tallies["executed requests"].add(
                f"{at}: executed request stored {_request_words(got.request)},"
                f" the serial runner gives {_request_words(want.request)}"
            )
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


def _request_words(request: tuple[str, str, str] | None) -> str:
    if request is None:
        return "none"
    request_id, fingerprint, outcome = request
    return f"{brief(request_id, 40)} {outcome} with fingerprint {fingerprint[:12]}"


def _row_words(row: ChangeRecord | ResultRecord) -> str:
    if isinstance(row, ChangeRecord):
        return f"before {_show(row.before)}, after {_show(row.after)}"
    return f"{row.stream} result {_show(row.payload)}"


def _fingerprint_undecidable(want: LineRecord, got: LineRecord) -> bool:
    """An event rebuilt from the event log's columns whose stored form may stand for more than
    one event: its fingerprint, taken of the event as executed, cannot be re-derived."""
    if want.request is None or got.request is None:
        return False
    same_otherwise = (want.request[0], want.request[2]) == (got.request[0], got.request[2])
    return same_otherwise and ambiguous(got.stream, got.payload)


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
