"""The exactly-once batch commit: one PostgreSQL transaction per micro-batch.

Spark tasks have handed the driver the batch's journal, one CSV part per task and table
(`ledger_engine.store.staging`). The commit, on the driver, takes the commit lock, checks
that its run still holds the run lease (`ledger_engine.store.lease`) and that the batch is new
and follows the last one, checks that no row was written by two tasks of one stage, writes
every part by COPY straight into the ledger tables (each journal row written once), checks
that they hold exactly what the tasks reported (every line of the batch once, no row twice,
nothing out of place, each row's changes a chain), checks that every row the batch changes
still holds the value the batch read, and then, set-based inside PostgreSQL: applies each
row's net change (from its first change's `before` to its last one's `after`, in the change
log), updates the tables' Merkle bucket digests, writes the batch row with the roots and the
hash chaining it to the batch before, and empties the staged rows of later rounds.

A batch id already committed with the same input is a no-op; with a different input it is an
error, since it means the streaming checkpoint and the system of record disagree.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from psycopg2 import errors, sql
from psycopg2.extras import execute_values
from pyarrow import csv
from sqlalchemy import Connection, Engine

from ledger_engine.core.declarations import StreamingLedger, Table
from ledger_engine.core.records import APPLIED, DUPLICATE, REJECTED, canonical_hash, canonical_json
from ledger_engine.core.stopwatch import Stopwatch
from ledger_engine.errors import CommitRefused
from ledger_engine.store.lease import check_fence
from ledger_engine.store.locks import COMMIT_LOCK
from ledger_engine.store.merkle import MODULUS, root_of
from ledger_engine.store.sql_files import identified, statement
from ledger_engine.store.staging import (
    JOURNAL_COLUMNS,
    JournalPart,
    clear_staging,
    copy_statement,
)

GENESIS_HASH = "0" * 64

# The commit's statements with nothing to fill in (sql/commit/); those that name a table are
# read where they are composed.
_COMMITTED_INPUT = statement("commit/committed_input")
_LOCK = statement("commit/lock")
_FIND_BATCH = statement("commit/find_batch")
_LAST_BATCH = statement("commit/last_batch")
_SORT_IN_MEMORY = statement("commit/sort_in_memory")
_PLAN_BY_KEYS = statement("commit/plan_by_keys")
_CHECK_EVENTS = statement("commit/check_events")
_PLAN_RESET = statement("commit/plan_reset")
_CHAIN_CHANGES = statement("commit/chain_changes")
_FIND_BROKEN_CHAIN = statement("commit/find_broken_chain")
_NET_CHANGES = statement("commit/net_changes")
_APPLY_SAVEPOINT = statement("commit/apply_savepoint")
_APPLY_RELEASE = statement("commit/apply_release")
_APPLY_UNDO = statement("commit/apply_undo")
_MERKLE_DIGESTS = statement("commit/merkle_digests")
_MERKLE_DELETE = statement("commit/merkle_delete")
_MERKLE_INSERT = statement("commit/merkle_insert")
_COUNT_OUTCOMES = statement("commit/count_outcomes")
_INSERT_BATCH = statement("commit/insert_batch")


@dataclass(frozen=True)
class StagedBatch:
    """What the driver knows of a staged batch: its input, and what the tasks reported."""

    batch_id: int
    ledger: str
    input_files: tuple[str, ...]
    input_fingerprint: str
    ingested: int  # non-blank lines: every one must be written as exactly one event
    journal: tuple[JournalPart, ...]  # every task's part, as its report handed it over
    merkle_deltas: Mapping[tuple[str, int], int]  # (table, bucket) -> digest delta
    execute_seconds: float
    fence_epoch: int  # the lease of the run that staged it (`ledger_engine.store.lease`)


@dataclass(frozen=True)
class CommitReport:
    batch_id: int
    committed: bool  # False: the batch was already committed (a replay), nothing changed
    batch_hash: str
    merkle_roots: dict[str, str]
    counts: dict[str, int]
    seconds: dict[str, float] = field(default_factory=dict)  # by step, for profiles


# The fields of a batch row that its hash covers; `prev_hash` chains it to the batch before.
HASHED_FIELDS = (
    "batch_id",
    "ledger",
    "input_fingerprint",
    "input_files",
    "events_ingested",
    "applied",
    "rejected",
    "duplicates",
    "changes",
    "results",
    "merkle_roots",
    "prev_hash",
)


def batch_row_hash(row: Mapping[str, Any]) -> str:
    """The hash of a batch row's recorded fields (`HASHED_FIELDS`)."""
    return canonical_hash({name: row[name] for name in HASHED_FIELDS})


def committed_input(engine: Engine, batch_id: int) -> str | None:
    """The input fingerprint of batch `batch_id` if it is committed."""
    with engine.connect() as conn:
        cursor = conn.connection.cursor()
        cursor.execute(_COMMITTED_INPUT, {"id": batch_id})
        row = cursor.fetchone()
        return None if row is None else row[0]


def last_batch_id(engine: Engine) -> int | None:
    """The id of the last committed batch; None before the first."""
    with engine.connect() as conn:
        cursor = conn.connection.cursor()
        cursor.execute(_LAST_BATCH)
        row = cursor.fetchone()
        return None if row is None else row[0]


def commit_staged(
    engine: Engine,
    ledger: StreamingLedger,
    batch: StagedBatch,
    before_commit: Callable[[], None] | None = None,
) -> CommitReport:
    """Commit a staged batch exactly once (see the module docstring).

    Refused (`Fenced`) if the run that staged it no longer holds the run lease.
    `before_commit` is called inside the transaction once everything is written, just
    before COMMIT (a fault point).
    """
    clock = Stopwatch()
    _check_writers(batch)  # before the commit lock: it reads only the tasks' reports
    clock.lap("check writers")
    with engine.begin() as conn:
        cursor = conn.connection.cursor()
        cursor.execute(_LOCK, {"lock": COMMIT_LOCK})
        check_fence(cursor, batch.fence_epoch)
        cursor.execute(_FIND_BATCH, {"id": batch.batch_id})
        existing = cursor.fetchone()
        if existing is not None:
            fingerprint, batch_hash, merkle_roots = existing
            if fingerprint != batch.input_fingerprint:
                raise CommitRefused(
                    f"batch {batch.batch_id} is already committed with other input files; "
                    "the streaming checkpoint does not belong to this database"
                )
            clear_staging(conn.connection, batch.batch_id)
            return CommitReport(batch.batch_id, False, batch_hash, merkle_roots, {})
        prev_hash = _check_follows_last(conn, batch.batch_id)
        cursor.execute(_SORT_IN_MEMORY)
        _write_journal(conn, batch, clock)
        _check_journal(conn, batch)
        clock.lap("check journal")
        _apply_rows(conn, ledger, batch.batch_id, clock)
        roots = _update_merkle(conn, ledger, batch.merkle_deltas)
        clock.lap("merkle")
        counts = _counts(conn, batch.batch_id)
        batch_hash = _insert_batch_row(conn, batch, counts, roots, prev_hash, clock.elapsed())
        clear_staging(conn.connection)
        clock.lap("batch row")
        if before_commit is not None:
            before_commit()
    clock.lap("commit")
    return CommitReport(batch.batch_id, True, batch_hash, roots, counts, clock.seconds)


def _check_follows_last(conn: Connection, batch_id: int) -> str:
    cursor = conn.connection.cursor()
    cursor.execute(_LAST_BATCH)
    last = cursor.fetchone()
    expected = 0 if last is None else last[0] + 1
    if batch_id != expected:
        raise CommitRefused(f"batch {batch_id} does not follow the last batch; expected {expected}")
    return GENESIS_HASH if last is None else last[1]


def _check_writers(batch: StagedBatch) -> None:
    """No row written by two tasks of one stage: a row's changes in one round come from the
    task of its bin (a settled row's, from the task that settled it), so two tasks of a stage
    writing one row means a broken schedule. Read from the CSV the commit is about to write
    (its table and key columns only, parsed by Arrow)."""
    rows_by_stage: dict[str, list[pa.Table]] = {}
    for task, part in enumerate(batch.journal):
        data = part.csv("ledger_change_log")
        if data is None:
            continue
        written = csv.read_csv(io.BytesIO(data), _CHANGE_CSV, _VALUES, _ROW_COLUMNS)
        written = written.append_column("task", pa.array([task] * written.num_rows, pa.int32()))
        rows_by_stage.setdefault(part.stage, []).append(written)
    for stage, tables in rows_by_stage.items():
        if len(tables) < 2:
            continue
        writers = (
            pa.concat_tables(tables)
            .group_by(["table_name", "key"])
            .aggregate([("task", "count_distinct")])
        )
        twice = writers.filter(pc.field("task_count_distinct") > 1)
        if twice.num_rows:
            row = (twice["table_name"][0].as_py(), twice["key"][0].as_py())
            raise CommitRefused(
                f"batch {batch.batch_id}: row {row} written by two tasks of {stage}"
            )


_CHANGE_CSV = csv.ReadOptions(column_names=["batch_id", *JOURNAL_COLUMNS["ledger_change_log"]])
_VALUES = csv.ParseOptions(newlines_in_values=True)  # keys are any text
_ROW_COLUMNS = csv.ConvertOptions(
    include_columns=["table_name", "key"],
    column_types={"table_name": pa.string(), "key": pa.string()},
    strings_can_be_null=False,
    quoted_strings_can_be_null=False,
)

# Each journal table in the order it is written: events first, which the other tables' rows
# belong to.
_JOURNAL_ORDER = tuple(JOURNAL_COLUMNS)


def _write_journal(conn: Connection, batch: StagedBatch, clock: Stopwatch) -> None:
    """COPY every task's journal part into the ledger tables; each COPY must write exactly
    the rows its task reported, and a row written twice (a key already taken) is refused."""
    cursor = conn.connection.cursor()
    for table in _JOURNAL_ORDER:
        statement = copy_statement(table, ["batch_id", *JOURNAL_COLUMNS[table]])
        query = statement.as_string(cursor)
        written = 0
        for part in batch.journal:
            data = part.csv(table)
            if data is None:
                continue
            try:
                cursor.copy_expert(query, io.BytesIO(data))
            except errors.UniqueViolation as exc:  # the transaction is rolled back
                raise CommitRefused(
                    f"batch {batch.batch_id}: {table} from task {part.slot}: a row written"
                    f" twice ({exc.diag.message_detail})"
                ) from exc
            written += cursor.rowcount
        # Every part's report counts, also one that handed over no CSV for the table.
        reported = sum(part.rows.get(table, 0) for part in batch.journal)
        if written != reported:
            raise CommitRefused(
                f"batch {batch.batch_id}: {table} took {written} rows, the tasks reported"
                f" {reported}: a task's rows are missing or doubled"
            )
        clock.lap(f"write journal: {table}")


def _check_journal(conn: Connection, batch: StagedBatch) -> None:
    """The batch's journal holds every line once, and nothing out of place."""
    cursor = conn.connection.cursor()
    # Each check reads the batch's rows by the tables' keys, whatever the statistics say (why:
    # sql/commit/plan_by_keys.sql).
    cursor.execute(_PLAN_BY_KEYS)
    cursor.execute(_CHECK_EVENTS, (batch.batch_id,))
    count, distinct, low, high = cursor.fetchone()
    expected = (batch.ingested, batch.ingested)
    if (count, distinct) != expected or (count and (low, high) != (0, count - 1)):
        raise CommitRefused(
            f"batch {batch.batch_id}: {count} events at {distinct} positions "
            f"({low}..{high}) for {batch.ingested} lines: every line must end exactly once"
        )
    for what, query, table, outcomes in _BELONGS:
        cursor.execute(identified(query, journal=table), (batch.batch_id, outcomes))
        stray = cursor.fetchone()[0]
        if stray:
            raise CommitRefused(f"batch {batch.batch_id}: {stray} {what} out of place")
    # Executed request ids are keyed by id alone, so they are found from the batch's events,
    # one probe each (a lateral subquery with a limit is never turned into a join): each
    # must be the request row of exactly one applied or rejected event of the batch.
    requests = sum(part.rows.get("ledger_requests", 0) for part in batch.journal)
    cursor.execute(_REQUESTS_IN_PLACE, (batch.batch_id, [APPLIED, REJECTED]))
    if cursor.fetchone()[0] != requests:
        raise CommitRefused(f"batch {batch.batch_id}: request ids out of place")
    cursor.execute(_PLAN_RESET)


# Rows that do not belong where they are, counted set-based in place of foreign keys (see
# sql/0005): (what, statement, journal table, outcomes its rows' events must have, or the
# outcome whose every event must have a row in it).
_ORPHANS = "commit/count_orphans"
_MISSING = "commit/count_missing"
_BELONGS = [
    ("changes", _ORPHANS, "ledger_change_log", [APPLIED]),
    ("results", _ORPHANS, "ledger_results", [APPLIED]),
    ("rejections", _ORPHANS, "ledger_rejections", [REJECTED]),
    ("duplicates", _ORPHANS, "ledger_duplicates", [DUPLICATE]),
    ("rejected events without their rejection", _MISSING, "ledger_rejections", REJECTED),
    ("duplicate events without their duplicate", _MISSING, "ledger_duplicates", DUPLICATE),
]
_REQUESTS_IN_PLACE = statement("commit/count_requests_in_place")


# Per key type, how a logged text key becomes the table's key; per value type, how a logged
# jsonb value becomes the table's value, and whether a table's value equals a logged one.
# Fixed SQL fragments, never built from data, kept here beside the types that choose them:
# the apply statements (sql/commit/apply_*.sql) take one of each per declared table.
_KEY = {str: sql.SQL("n.key"), int: sql.SQL("n.key::bigint")}
_VALUE = {
    int: sql.SQL("(n.after #>> '{}')::bigint"),
    str: sql.SQL("n.after #>> '{}'"),
    dict: sql.SQL("n.after"),
}
_HOLDS_BEFORE = {
    int: sql.SQL("t.value = (n.before #>> '{}')::bigint"),
    str: sql.SQL("t.value = n.before #>> '{}'"),
    dict: sql.SQL("t.value = n.before"),
}


def _apply_rows(conn: Connection, ledger: StreamingLedger, batch_id: int, clock: Stopwatch) -> None:
    """Apply each written row's net change over the batch, found in its change log, after
    checking that each of a row's changes starts from the one before it and that the row
    still holds the value the batch read."""
    cursor = conn.connection.cursor()
    # One sort of the batch's changes by row and position serves the check and the net
    # changes (sql/commit/chain_changes.sql). The change log is the one record of the batch's
    # row writes: the tasks hand over no separate net changes for the commit (a row written
    # twice cost a batch of 10^5 transfers 2.5 s in its tasks).
    cursor.execute(_CHAIN_CHANGES, (batch_id,))
    cursor.execute(_FIND_BROKEN_CHAIN)
    broken = cursor.fetchone()
    if broken is not None:
        raise CommitRefused(
            f"batch {batch_id}: the change of row {broken[:2]} at position {broken[2]} does not"
            " start from the row's change before it"
        )
    cursor.execute(_NET_CHANGES)
    clock.lap("apply rows: net changes")
    for table in ledger.tables.values():
        _apply_table(cursor, table, batch_id)
        clock.lap(f"apply rows: {table.name}")


# The net changes of one table by kind (updates, deletes, inserts): the apply statements must
# touch exactly that many rows of each kind; a row the batch created and deleted again must be
# absent.
_NET_KINDS = statement("commit/count_net_kinds")


def _apply_table(cursor: Any, table: Table, batch_id: int) -> None:
    """Apply the net changes, one statement for the rows that existed (updated or deleted,
    each row's first change in the batch linked to the change the row named) and one for the
    rows created, each touching only rows that still hold what the batch read and making them
    name the batch's last change of them: a row count short of the batch's means the system
    of record changed behind the engine, and the batch is refused (after undoing this table's
    statements, so that the refusal can name the rows)."""
    ident = sql.Identifier(table.sql_name)
    # The declared table's identifier and its types' fixed fragments (`_KEY`, `_VALUE`,
    # `_HOLDS_BEFORE`), never a value: each statement takes the ones it names.
    parts = {
        "table": ident,
        "key": _KEY[table.key_type],
        "value": _VALUE[table.value_type],
        "holds_before": _HOLDS_BEFORE[table.value_type],
    }

    def applying(name: str) -> sql.Composed:
        return sql.SQL(statement(f"commit/{name}")).format(**parts)

    bound = {"batch_id": batch_id, "table_name": table.name}
    cursor.execute(applying("lock_table"))
    cursor.execute(_NET_KINDS, (table.name,))
    kinds = cursor.fetchone()
    cursor.execute(_APPLY_SAVEPOINT)
    try:
        cursor.execute(applying("apply_existing"), bound)
    except errors.CheckViolation as exc:  # the transaction is rolled back
        raise CommitRefused(
            f"batch {batch_id}: a row of {table.name} names a last change that is not before"
            f" the batch ({exc.diag.message_detail})"
        ) from exc
    updated, deleted = cursor.fetchone()
    cursor.execute(applying("apply_inserts"), bound)
    applied = (updated, deleted, cursor.rowcount) == kinds
    cursor.execute(applying("recreated_present"), (table.name,))
    applied = applied and not cursor.fetchone()[0]
    if applied:
        cursor.execute(_APPLY_RELEASE)
        return
    cursor.execute(_APPLY_UNDO)
    cursor.execute(applying("changed_rows"), (table.name,))
    changed = cursor.fetchall()
    assert changed, f"{table.name}: a net change did not apply, yet every row holds its read"
    found = "; ".join(
        f"{table.name}[{k!r}] is {now} but the batch read {read}" for k, now, read in changed
    )
    raise CommitRefused(f"{found}: the system of record changed behind the engine")


def _update_merkle(
    conn: Connection, ledger: StreamingLedger, deltas: Mapping[tuple[str, int], int]
) -> dict[str, str]:
    """Add the batch's bucket deltas to the stored digests; return each table's root.

    A table without stored digests is empty before this batch (every batch that leaves rows
    in a table stores their digests), so its digests are the batch's deltas alone.
    """
    cursor = conn.connection.cursor()
    roots: dict[str, str] = {}
    for name in sorted(ledger.tables):
        cursor.execute(_MERKLE_DIGESTS, (name,))
        digests = {bucket: int(digest, 16) for bucket, digest in cursor.fetchall()}
        touched = {bucket for (table_name, bucket) in deltas if table_name == name}
        for bucket in touched:
            digests[bucket] = (digests.get(bucket, 0) + deltas[(name, bucket)]) % MODULUS
        if touched:
            cursor.execute(_MERKLE_DELETE, (name, sorted(touched)))
            rows = [
                (name, b, format(digests[b], "064x")) for b in sorted(touched) if digests.get(b)
            ]
            if rows:
                execute_values(cursor, _MERKLE_INSERT, rows)
        roots[name] = root_of(digests)
    return roots


def _counts(conn: Connection, batch_id: int) -> dict[str, int]:
    cursor = conn.connection.cursor()
    cursor.execute(_COUNT_OUTCOMES, (batch_id,))
    by_outcome = dict(cursor.fetchall())
    counts = {status: by_outcome.get(status, 0) for status in (APPLIED, REJECTED, DUPLICATE)}
    for name, table in (("changes", "ledger_change_log"), ("results", "ledger_results")):
        cursor.execute(identified("commit/count_batch_rows", journal=table), (batch_id,))
        counts[name] = cursor.fetchone()[0]
    return counts


def _insert_batch_row(
    conn: Connection,
    batch: StagedBatch,
    counts: dict[str, int],
    roots: dict[str, str],
    prev_hash: str,
    commit_seconds: float,
) -> str:
    row = {
        "batch_id": batch.batch_id,
        "ledger": batch.ledger,
        "input_fingerprint": batch.input_fingerprint,
        "input_files": list(batch.input_files),
        "events_ingested": batch.ingested,
        "applied": counts[APPLIED],
        "rejected": counts[REJECTED],
        "duplicates": counts[DUPLICATE],
        "changes": counts["changes"],
        "results": counts["results"],
        "merkle_roots": roots,
        "prev_hash": prev_hash,
    }
    assert set(row) == set(HASHED_FIELDS)
    assert row["events_ingested"] == row["applied"] + row["rejected"] + row["duplicates"]
    batch_hash = batch_row_hash(row)
    conn.connection.cursor().execute(
        _INSERT_BATCH,
        {
            **row,
            "input_files": json.dumps(row["input_files"]),
            "merkle_roots": canonical_json(roots),
            "batch_hash": batch_hash,
            "execute_seconds": batch.execute_seconds,
            # Commit latency so far, for the reports; not hashed (a measurement, not a fact).
            "commit_seconds": commit_seconds,
        },
    )
    return batch_hash
