"""Reading the committed event log, change log and results in (batch, position) order, in
step with the chunks a re-derivation runs, in one consistent read of the store.

`consistent_read` opens a read-only REPEATABLE READ transaction, so that reads taking minutes
still see one committed state while the pipeline commits more. `StoredLog` reads through
server-side cursors, a few thousand rows at a time, never the whole log.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

from sqlalchemy import Connection, Engine, text

from ledger_engine.audit.rederivation.expected import ChangeRecord, LineRecord, Place, ResultRecord
from ledger_engine.audit.sql_files import audit_query

MAX_POSITION = 2**31 - 1  # positions are PostgreSQL integers


@contextmanager
def consistent_read(engine: Engine) -> Iterator[Connection]:
    """A read-only connection whose reads all see one state of the store, however long
    they take and whatever commits meanwhile."""
    with engine.connect() as conn:
        conn.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
        with conn.begin():
            yield conn


# The statements of the three cursors (lines, changes, results): over every batch, and over
# the batch `%(batch)s` (bound).
_OF_ALL = (
    audit_query("stored_log_lines"),
    audit_query("stored_log_changes"),
    audit_query("stored_log_results"),
)
_OF_ONE_BATCH = (
    audit_query("stored_log_lines_of_batch"),
    audit_query("stored_log_changes_of_batch"),
    audit_query("stored_log_results_of_batch"),
)
_BATCH_ROWS = text(audit_query("stored_log_batch_rows"))


def _line_record(row: tuple) -> LineRecord:
    *head, raw, kind, ended_stream, ended_request_id = row[:14]
    raw = None if raw is None else bytes(raw)
    request = None if row[14] is None else tuple(row[14:])
    return LineRecord(*head, raw, kind, ended_stream, ended_request_id, request)


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

    `conn` must be in a transaction that sees one state of the store (REPEATABLE READ): the three
    cursors and the tables read at the end must agree. `batch_id` restricts it to one batch.
    """

    def __init__(self, conn: Connection, batch_id: int | None = None) -> None:
        params = {} if batch_id is None else {"batch": batch_id}
        lines, changes, results = _OF_ALL if batch_id is None else _OF_ONE_BATCH
        self._lines = _Rows(conn, "replay_lines", lines, params)
        self._changes = _Rows(conn, "replay_changes", changes, params)
        self._results = _Rows(conn, "replay_results", results, params)

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
    """A batch row's counts."""

    batch_id: int
    ingested: int
    applied: int
    rejected: int
    duplicates: int
    changes: int
    results: int


def batch_rows(conn: Connection) -> list[BatchRow]:
    """Every batch row's counts, in batch order."""
    return [BatchRow(*row) for row in conn.execute(_BATCH_ROWS)]
