"""What a page shows of the ledger, read from the system of record in one consistent read.

Every SQL text of the report is here, each a `text()` with named parameters bound at execution
(nothing is ever formatted into the SQL), or a file of `audit/sql/` where a declared table's
identifier must be named (`audit.sql_files.audit_query`, which checks it). The dataclasses
are what the reads fill and what the renderer reads.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Connection, Engine, text

from ledger_engine.audit.sql_files import audit_query
from ledger_engine.core.money import Unit

TABLE_BATCHES = 50  # the latest batches listed one per row
CHART_POINTS = 500  # at most this many points in the throughput chart


@dataclass(frozen=True)
class BatchRow:
    """One committed batch, as the report shows it."""

    batch_id: int
    committed_at: datetime
    ingested: int
    applied: int
    rejected: int
    duplicates: int
    changes: int
    execute_seconds: float
    commit_seconds: float
    batch_hash: str
    merkle_roots: Mapping[str, str]

    @property
    def throughput(self) -> float | None:
        """Events per second over execute and commit; None if no time was measured."""
        return _rate(self.ingested, self.execute_seconds + self.commit_seconds)


@dataclass(frozen=True)
class ThroughputPoint:
    """Consecutive batches `first_batch`..`last_batch`, summed (one batch when not grouped)."""

    first_batch: int
    last_batch: int
    events: int
    seconds: float

    @property
    def throughput(self) -> float | None:
        """Events per second over the group's seconds; None if no time was measured."""
        return _rate(self.events, self.seconds)

    @property
    def grouped(self) -> bool:
        """Whether the point stands for more than one batch."""
        return self.first_batch != self.last_batch


@dataclass(frozen=True)
class Totals:
    """Sums over every committed batch."""

    batches: int
    ingested: int
    applied: int
    rejected: int
    duplicates: int
    changes: int


@dataclass(frozen=True)
class TableTotal:
    """A declared table of integers: its rows, the total of its values (minor units) and the
    unit it declares (`None`: plain integers), as recorded in the system of record."""

    name: str
    rows: int
    total: int
    unit: Unit | None


@dataclass(frozen=True)
class LedgerView:
    """What a page shows of the system of record, in one consistent read."""

    totals: Totals
    latest: list[BatchRow]  # newest first
    throughput: list[ThroughputPoint]  # oldest first
    rejections: list[tuple[str, int]]  # (reason, events), most frequent first
    tables: list[TableTotal] = field(default_factory=list)  # the tables of integers, by name


def _rate(events: int, seconds: float) -> float | None:
    return events / seconds if seconds > 0 else None


_TOTALS_SQL = text(
    "SELECT count(*) AS batches, coalesce(sum(events_ingested), 0) AS ingested,"
    " coalesce(sum(applied), 0) AS applied, coalesce(sum(rejected), 0) AS rejected,"
    " coalesce(sum(duplicates), 0) AS duplicates, coalesce(sum(changes), 0) AS changes"
    " FROM ledger_batches"
)
_SPAN_TOTALS_SQL = text(
    "SELECT count(*) AS batches, coalesce(sum(events_ingested), 0) AS ingested,"
    " coalesce(sum(applied), 0) AS applied, coalesce(sum(rejected), 0) AS rejected,"
    " coalesce(sum(duplicates), 0) AS duplicates, coalesce(sum(changes), 0) AS changes"
    " FROM ledger_batches WHERE batch_id BETWEEN :first AND :last"
)
_LATEST_SQL = text(
    "SELECT batch_id, committed_at, events_ingested AS ingested, applied, rejected, duplicates,"
    " changes, execute_seconds, commit_seconds, batch_hash, merkle_roots"
    " FROM ledger_batches ORDER BY batch_id DESC LIMIT :limit"
)
# Batch ids are consecutive from 0 (the commit refuses gaps), so `batch_id / :width` makes
# groups of `width` consecutive batches.
_THROUGHPUT_SQL = text(
    "SELECT min(batch_id) AS first_batch, max(batch_id) AS last_batch,"
    " sum(events_ingested) AS events, sum(execute_seconds + commit_seconds) AS seconds"
    " FROM ledger_batches GROUP BY batch_id / :width ORDER BY first_batch"
)
# The declared tables of integers, with their units (sql/0021_declared_units.sql); one schema
# holds one ledger.
_INT_TABLES_SQL = text(
    "SELECT table_name, sql_name, unit_code, unit_precision FROM ledger_declared_tables"
    " WHERE value_type = 'bigint' ORDER BY table_name"
)
# A function's failure reads `function_error: <ExceptionType>: <message>`: one reason, many texts.
_REJECTIONS_SQL = text(
    "SELECT split_part(reason, ':', 1) AS reason, count(*) AS events FROM ledger_rejections"
    " GROUP BY 1 ORDER BY 2 DESC, 1"
)


def read_ledger(
    engine: Engine, *, table_batches: int = TABLE_BATCHES, chart_points: int = CHART_POINTS
) -> LedgerView:
    """Read what a page shows, in one consistent read (REPEATABLE READ): a batch committing
    meanwhile shows in none of the numbers, or in all of them."""
    with engine.connect() as conn:
        conn = conn.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin():
            totals = _totals(conn)
            return LedgerView(
                totals=totals,
                latest=_latest(conn, table_batches),
                throughput=_throughput(conn, totals.batches, chart_points),
                rejections=_rejections(conn),
                tables=_table_totals(conn),
            )


def read_span(engine: Engine, first: int, last: int) -> Totals:
    """Sums over the committed batches `first` to `last` (those a page is about)."""
    with engine.connect() as conn:
        found = conn.execute(_SPAN_TOTALS_SQL, {"first": first, "last": last}).one()
        return Totals(**found._mapping)


def _totals(conn: Connection) -> Totals:
    return Totals(**conn.execute(_TOTALS_SQL).one()._mapping)


def _latest(conn: Connection, table_batches: int) -> list[BatchRow]:
    rows = conn.execute(_LATEST_SQL, {"limit": max(table_batches, 1)})
    return [BatchRow(**row._mapping) for row in rows]


def _throughput(conn: Connection, batches: int, chart_points: int) -> list[ThroughputPoint]:
    width = max(1, math.ceil(batches / max(chart_points, 1)))
    rows = conn.execute(_THROUGHPUT_SQL, {"width": width})
    return [ThroughputPoint(**row._mapping) for row in rows]


def _rejections(conn: Connection) -> list[tuple[str, int]]:
    return [(row.reason, row.events) for row in conn.execute(_REJECTIONS_SQL)]


def _table_totals(conn: Connection) -> list[TableTotal]:
    """Each declared table of integers summed: one read of the table each (the page's figures
    then show what the invariants hold the totals to)."""
    totals = []
    for table in conn.execute(_INT_TABLES_SQL).all():
        unit = None if table.unit_code is None else Unit(table.unit_code, table.unit_precision)
        found = conn.execute(text(audit_query("report_table_total", table=table.sql_name))).one()
        totals.append(TableTotal(table.table_name, found.row_count, int(found.total), unit))
    return totals
