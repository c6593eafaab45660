"""The exactly-once batch commit: one PostgreSQL transaction per micro-batch.

The transaction takes the commit lock, checks that the batch is new and follows the last one,
checks that every row it changes still holds the value the run read, then writes the rows, the
event log, the change log, results, rejections, duplicates, executed request ids, and finally
the batch row with the tables' Merkle roots and the hash chaining it to the previous batch.
A batch id that is already committed with the same input is a no-op; with a different input it
is an error, since it means the streaming checkpoint and the system of record disagree.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from psycopg2 import sql
from psycopg2.extras import Json, execute_values
from sqlalchemy import Connection, Engine, text

from ledger_engine.admission import valid_request_id
from ledger_engine.api import StreamingLedger
from ledger_engine.audit.merkle import merkle_root
from ledger_engine.batch import APPLIED, DUPLICATE, REJECTED, BatchRecord, LineOutcome
from ledger_engine.model import canonical_hash, canonical_json
from ledger_engine.store.state import key_text, snapshot_rows
from ledger_engine.values import json_problem, storable_text

GENESIS_HASH = "0" * 64
# An arbitrary constant naming "batch commit" among the platform's advisory locks.
_COMMIT_LOCK = 7_318_002


class CommitRefused(RuntimeError):
    """The batch cannot be committed without corrupting the system of record."""


@dataclass(frozen=True)
class CommitReport:
    batch_id: int
    committed: bool  # False: the batch was already committed (a replay), nothing changed
    batch_hash: str
    merkle_roots: dict[str, str]


def commit_batch(engine: Engine, ledger: StreamingLedger, batch: BatchRecord) -> CommitReport:
    """Commit `batch` exactly once (see the module docstring)."""
    with engine.begin() as conn:
        conn.execute(text("SELECT pg_advisory_xact_lock(:lock)"), {"lock": _COMMIT_LOCK})
        existing = conn.execute(
            text(
                "SELECT input_fingerprint, batch_hash, merkle_roots FROM ledger_batches"
                " WHERE batch_id = :id"
            ),
            {"id": batch.batch_id},
        ).first()
        if existing is not None:
            if existing.input_fingerprint != batch.input_fingerprint:
                raise CommitRefused(
                    f"batch {batch.batch_id} is already committed with other input files; "
                    "the streaming checkpoint does not belong to this database"
                )
            return CommitReport(batch.batch_id, False, existing.batch_hash, existing.merkle_roots)
        prev_hash = _check_follows_last(conn, batch.batch_id)
        _apply_rows(conn, ledger, batch)
        _insert_log(conn, batch)
        roots = {
            name: merkle_root(snapshot_rows(conn, table))
            for name, table in sorted(ledger.tables.items())
        }
        batch_hash = _insert_batch_row(conn, batch, roots, prev_hash)
    return CommitReport(batch.batch_id, True, batch_hash, roots)


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


def _check_follows_last(conn: Connection, batch_id: int) -> str:
    last = conn.execute(
        text("SELECT batch_id, batch_hash FROM ledger_batches ORDER BY batch_id DESC LIMIT 1")
    ).first()
    expected = 0 if last is None else last.batch_id + 1
    if batch_id != expected:
        raise CommitRefused(f"batch {batch_id} does not follow the last batch; expected {expected}")
    return GENESIS_HASH if last is None else last.batch_hash


def _apply_rows(conn: Connection, ledger: StreamingLedger, batch: BatchRecord) -> None:
    by_table: dict[str, dict[Any, tuple[Any, Any]]] = defaultdict(dict)
    for (table, key), before_after in batch.net_changes().items():
        by_table[table][key] = before_after
    cursor = conn.connection.cursor()
    for name, rows in sorted(by_table.items()):
        table = ledger.tables[name]
        ident = sql.Identifier(name)
        cursor.execute(
            sql.SQL("SELECT key, value FROM {} WHERE key = ANY(%s) FOR UPDATE").format(ident),
            (list(rows),),
        )
        current = dict(cursor.fetchall())
        for key, (before, _) in rows.items():
            if current.get(key) != before:
                raise CommitRefused(
                    f"{name}[{key!r}] is {current.get(key)!r} in PostgreSQL but the batch read "
                    f"{before!r}: the system of record changed behind the engine"
                )
        adapt = Json if table.value_type is dict else (lambda v: v)
        upserts = [(key, adapt(after)) for key, (_, after) in rows.items() if after is not None]
        deletes = [key for key, (_, after) in rows.items() if after is None]
        if upserts:
            execute_values(
                cursor,
                sql.SQL(
                    "INSERT INTO {} (key, value) VALUES %s"
                    " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
                ).format(ident),
                upserts,
                page_size=1000,
            )
        if deletes:
            cursor.execute(sql.SQL("DELETE FROM {} WHERE key = ANY(%s)").format(ident), (deletes,))


def _clean(value: Any) -> str | None:
    """A text column's value: strings PostgreSQL can store, otherwise NULL (raw bytes stay in
    `ledger_rejections.raw_input`)."""
    if value is None:
        return None
    if not isinstance(value, str):
        value = canonical_json(value) if json_problem(value, "") is None else repr(value)
    return value if storable_text(value) else None


def _request_id(value: Any) -> str | None:
    """A valid request id, or NULL: an invalid one takes no id (its raw line is kept)."""
    return value if valid_request_id(value) else None


def _readable(detail: str) -> str:
    return detail.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")


def _json(value: Any) -> str | None:
    return None if value is None else canonical_json(value)


def _insert_log(conn: Connection, batch: BatchRecord) -> None:
    events, changes, results, rejections, duplicates, requests = [], [], [], [], [], []
    bid = batch.batch_id
    for outcome in batch.outcomes:
        line, pos = outcome.line, outcome.line.position
        event = line.event
        storable = (
            event is not None
            and isinstance(event.payload, dict)
            and json_problem(event.payload, "payload") is None
        )
        payload = canonical_json(event.payload) if storable else None
        events.append(
            (
                bid,
                pos,
                line.source_file,
                line.line_number,
                _clean(event.stream) if event else None,
                _request_id(event.request_id) if event else None,
                payload,
                outcome.status,
            )
        )
        for seq, change in enumerate(outcome.changes):
            changes.append(
                (
                    bid,
                    pos,
                    seq,
                    change.request_id,
                    change.table,
                    key_text(change.key),
                    _json(change.before),
                    _json(change.after),
                )
            )
        for seq, result in enumerate(outcome.results):
            results.append(
                (bid, pos, seq, result.stream, result.request_id, canonical_json(result.payload))
            )
        if outcome.status == REJECTED:
            rejection = outcome.rejection
            assert rejection is not None
            rejections.append(
                (
                    bid,
                    pos,
                    _clean(rejection.stream),
                    _request_id(rejection.request_id),
                    rejection.reason,
                    _readable(rejection.detail),
                    line.raw,
                )
            )
        if outcome.status == DUPLICATE:
            duplicate = outcome.duplicate
            assert duplicate is not None
            duplicates.append(
                (bid, pos, _clean(duplicate.stream), duplicate.request_id, duplicate.kind)
            )
        if _executed(outcome):
            assert event is not None
            requests.append((event.request_id, bid, pos, event.fingerprint(), outcome.status))

    cursor = conn.connection.cursor()
    _insert(cursor, "ledger_events", events, "(%s,%s,%s,%s,%s,%s,%s::jsonb,%s)")
    _insert(cursor, "ledger_change_log", changes, "(%s,%s,%s,%s,%s,%s,%s::jsonb,%s::jsonb)")
    _insert(cursor, "ledger_results", results, "(%s,%s,%s,%s,%s,%s::jsonb)")
    _insert(cursor, "ledger_rejections", rejections, None)
    _insert(cursor, "ledger_duplicates", duplicates, None)
    _insert(cursor, "ledger_requests", requests, None)


def _executed(outcome: LineOutcome) -> bool:
    """Applied or rejected by the runner under a valid request id: its id is now taken."""
    event = outcome.line.event
    return (
        event is not None
        and outcome.status in (APPLIED, REJECTED)
        and valid_request_id(event.request_id)
    )


_INSERTS = {
    "ledger_events": "INSERT INTO ledger_events (batch_id, position, source_file, line_number,"
    " stream, request_id, payload, outcome) VALUES %s",
    "ledger_change_log": "INSERT INTO ledger_change_log (batch_id, position, seq, request_id,"
    " table_name, key, before, after) VALUES %s",
    "ledger_results": "INSERT INTO ledger_results (batch_id, position, seq, stream, request_id,"
    " payload) VALUES %s",
    "ledger_rejections": "INSERT INTO ledger_rejections (batch_id, position, stream, request_id,"
    " reason, detail, raw_input) VALUES %s",
    "ledger_duplicates": "INSERT INTO ledger_duplicates (batch_id, position, stream, request_id,"
    " kind) VALUES %s",
    "ledger_requests": "INSERT INTO ledger_requests (request_id, batch_id, position, fingerprint,"
    " outcome) VALUES %s",
}


def _insert(cursor: Any, table: str, rows: list[tuple], template: str | None) -> None:
    if rows:
        execute_values(cursor, _INSERTS[table], rows, template=template, page_size=1000)


def _insert_batch_row(
    conn: Connection, batch: BatchRecord, roots: dict[str, str], prev_hash: str
) -> str:
    row = {
        "batch_id": batch.batch_id,
        "ledger": batch.ledger,
        "input_fingerprint": batch.input_fingerprint,
        "input_files": list(batch.input_files),
        "events_ingested": len(batch.outcomes),
        "applied": batch.count(APPLIED),
        "rejected": batch.count(REJECTED),
        "duplicates": batch.count(DUPLICATE),
        "changes": sum(len(o.changes) for o in batch.outcomes),
        "results": sum(len(o.results) for o in batch.outcomes),
        "merkle_roots": roots,
        "prev_hash": prev_hash,
    }
    assert set(row) == set(HASHED_FIELDS)
    assert row["events_ingested"] == row["applied"] + row["rejected"] + row["duplicates"]
    batch_hash = batch_row_hash(row)
    conn.execute(
        text(
            "INSERT INTO ledger_batches (batch_id, ledger, input_fingerprint, input_files,"
            " events_ingested, applied, rejected, duplicates, changes, results, merkle_roots,"
            " prev_hash, batch_hash, execute_seconds)"
            " VALUES (:batch_id, :ledger, :input_fingerprint, CAST(:input_files AS jsonb),"
            " :events_ingested, :applied, :rejected, :duplicates, :changes, :results,"
            " CAST(:merkle_roots AS jsonb), :prev_hash, :batch_hash, :execute_seconds)"
        ),
        {
            **row,
            "input_files": json.dumps(row["input_files"]),
            "merkle_roots": canonical_json(roots),
            "batch_hash": batch_hash,
            "execute_seconds": batch.execute_seconds,
        },
    )
    return batch_hash
