"""Tasks hand the commit their part of a batch's journal, and stage what later rounds read:
values survive the journal's CSV and COPY exactly, a task that runs again replaces its earlier
staging, and the commit refuses a journal that is not what the tasks reported."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from dataclasses import replace

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine

from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.core.records import Result
from ledger_engine.errors import CommitRefused
from ledger_engine.pipeline.job import BatchProcessor, files_frame
from ledger_engine.store.commit import StagedBatch, commit_staged
from ledger_engine.store.database import libpq_url
from ledger_engine.store.lease import RunLease, run_lease
from ledger_engine.store.staging import (
    JOURNAL_COLUMNS,
    STAGED_ROWS,
    JournalPart,
    Stager,
    copy_statement,
    csv_of,
    journal_csv,
    net_row,
    result_row,
)
from tests.support.database import rows

HOSTILE = [
    "plain",
    "",
    "tab\there",
    "new\nline\r\nand return",
    "back\\slash \\N \\x00",
    'quote " and , comma',
    "ünïcödé ✓ 𝄞",
    "'); DROP TABLE accounts; --",
]


def dsn(engine: Engine) -> str:
    return libpq_url(engine.url.render_as_string(hide_password=False))


@pytest.fixture
def lease(engine: Engine) -> Iterator[RunLease]:
    """The run lease, held for the test: staging checks it."""
    with run_lease(engine, "pytest") as held:
        yield held


def copied_and_read(engine: Engine, part: JournalPart, *queries: str) -> list[list[tuple]]:
    """`part` written as the commit writes it (COPY), each query's rows read, all rolled back."""
    conn = engine.raw_connection()
    try:
        with conn.cursor() as cursor:
            for table, data in unpacked(part).items():
                statement = copy_statement(table, ["batch_id", *JOURNAL_COLUMNS[table]])
                cursor.copy_expert(statement.as_string(cursor), io.BytesIO(data))
            found = []
            for query in queries:
                cursor.execute(query)
                found.append(cursor.fetchall())
            return found
    finally:
        conn.rollback()
        conn.close()


def test_text_bytes_and_nulls_survive_the_journal_exactly(engine: Engine, lease: RunLease) -> None:
    stager = Stager(dsn(engine), 7, "test:0", lease.epoch)
    for position, value in enumerate(HOSTILE):
        stager.add(
            "ledger_rejections",
            (position, value, None, "aborted", value, value.encode() + b"\x00\xff"),
        )
        stager.add("ledger_results", (position, 0, "s", value or "r", json.dumps(value)))
    part = stager.commit()
    assert part.rows == {"ledger_rejections": len(HOSTILE), "ledger_results": len(HOSTILE)}
    stored, payloads = copied_and_read(
        engine,
        part,
        "SELECT stream, request_id, detail, raw_input FROM ledger_rejections"
        " WHERE batch_id = 7 ORDER BY position",
        "SELECT payload FROM ledger_results WHERE batch_id = 7 ORDER BY position",
    )
    assert [(s, r, d, bytes(raw)) for s, r, d, raw in stored] == [
        (v, None, v, v.encode() + b"\x00\xff") for v in HOSTILE
    ]
    assert payloads == [(v,) for v in HOSTILE]


RESULT_PAYLOADS = [None, 0, -7, "text", True, [1, "a", None], {"nested": {"x": [None]}}]


def test_a_result_of_any_json_value_null_included_is_stored_as_that_value(
    engine: Engine, lease: RunLease
) -> None:
    stager = Stager(dsn(engine), 7, "test:0", lease.epoch)
    for position, payload in enumerate(RESULT_PAYLOADS):
        stager.add("ledger_results", result_row(position, 0, Result("s", f"r{position}", payload)))
    (stored,) = copied_and_read(
        engine,
        stager.commit(),
        "SELECT payload IS NULL, jsonb_typeof(payload), payload FROM ledger_results"
        " WHERE batch_id = 7 ORDER BY position",
    )
    assert [sql_null for sql_null, _, _ in stored] == [False] * len(RESULT_PAYLOADS)
    assert stored[0][1] == "null", "a null result is JSON's null"
    assert [payload for _, _, payload in stored] == RESULT_PAYLOADS


def test_a_task_staging_its_slot_again_replaces_its_earlier_attempt(
    engine: Engine, lease: RunLease
) -> None:
    for attempt in range(3):
        stager = Stager(dsn(engine), 1, "round0:1", lease.epoch)
        stager.add(STAGED_ROWS, net_row("accounts", "a", 0, None, attempt))
        stager.commit()
    other = Stager(dsn(engine), 1, "round0:2", lease.epoch)
    other.add(STAGED_ROWS, net_row("accounts", "b", 0, None, 9))
    other.commit()
    assert rows(engine, "SELECT slot, key, after FROM ledger_stage_rows ORDER BY slot") == [
        ("round0:1", "a", 2),
        ("round0:2", "b", 9),
    ]


def test_an_abandoned_attempt_stages_nothing(engine: Engine, lease: RunLease) -> None:
    stager = Stager(dsn(engine), 1, "round0:0", lease.epoch)
    stager.add(STAGED_ROWS, net_row("accounts", "a", 0, None, 1))
    stager.flush()
    stager.abandon()
    assert rows(engine, "SELECT count(*) FROM ledger_stage_rows") == [(0,)]


@pytest.fixture
def staged(spark, engine: Engine, lease: RunLease):
    """A staged, uncommitted batch of three deposits and a transfer."""
    lines = [
        {
            "stream": "deposits",
            "request_id": f"d{i}",
            "payload": {
                "account_id": f"a{i}",
                "asset_id": f"s{i}",
                "amount": 100,
                "asset_amount": 5,
            },
        }
        for i in range(3)
    ]
    lines.append(
        {
            "stream": "transfers",
            "request_id": "t1",
            "payload": {
                "source_account_id": "a0",
                "target_account_id": "a1",
                "source_asset_id": "s0",
                "target_asset_id": "s1",
                "amount": 10,
                "asset_amount": 1,
            },
        }
    )
    content = "".join(json.dumps(line) + "\n" for line in lines).encode()
    processor = BatchProcessor(spark, build_ledger(), engine, lease)
    batch, profile = processor.stage(0, files_frame(spark, [("b.jsonl", content)]))
    assert batch is not None and profile is not None
    return batch


def unpacked(part: JournalPart) -> dict[str, bytes]:
    """Every CSV the task handed over, by table, unpacked."""
    return {table: part.csv(table) for table in part.packed}


def tampered(
    batch: StagedBatch,
    table: str,
    edit: Callable[[str, list[str]], list[str]],
    *,
    recount: bool = False,
) -> StagedBatch:
    """`batch` with each task's CSV lines of `table` replaced by `edit(slot, lines)` (the
    fixture's values hold no line breaks); the counts the tasks reported are kept unless
    `recount`."""
    parts = []
    for part in batch.journal:
        data = part.csv(table)
        if data is None:
            parts.append(part)
            continue
        lines = edit(part.slot, data.decode().splitlines())
        counts = {**part.rows, table: len(lines)} if recount else part.rows
        csv = {**unpacked(part), table: "".join(line + "\n" for line in lines).encode()}
        parts.append(JournalPart.of(part.slot, csv, counts))
    return replace(batch, journal=tuple(parts))


def at(position: int, line: str) -> bool:
    """Whether a journal line (batch id, then position) is of the event at `position`."""
    return line.split(",")[1] == str(position)


def refuses(engine: Engine, batch: StagedBatch, message: str) -> None:
    with pytest.raises(CommitRefused, match=message):
        commit_staged(engine, build_ledger(), batch)
    assert rows(engine, "SELECT count(*) FROM ledger_batches") == [(0,)]
    assert rows(engine, "SELECT count(*) FROM accounts") == [(0,)]
    assert rows(engine, "SELECT count(*) FROM ledger_events") == [(0,)]


def test_a_row_written_twice_is_refused(engine: Engine, staged) -> None:
    def doubled(slot: str, lines: list[str]) -> list[str]:
        return lines + [line for line in lines if at(3, line)]

    refuses(engine, tampered(staged, "ledger_change_log", doubled), "a row written twice")
    counted = tampered(staged, "ledger_change_log", doubled, recount=True)
    refuses(engine, counted, "ledger_change_log from task .*: a row written twice")


def test_a_missing_event_is_refused(engine: Engine, staged) -> None:
    def dropped(slot: str, lines: list[str]) -> list[str]:
        return [line for line in lines if not at(1, line)]

    missing = tampered(staged, "ledger_events", dropped)
    refuses(engine, missing, "ledger_events took 3 rows, the tasks reported 4")
    counted = tampered(staged, "ledger_events", dropped, recount=True)
    refuses(engine, counted, "3 events at 3 positions .* every line must end exactly once")


def test_rows_a_task_reported_but_did_not_hand_over_are_refused(engine: Engine, staged) -> None:
    parts = []
    for part in staged.journal:
        csv = unpacked(part)
        csv.pop("ledger_results", None)
        parts.append(JournalPart.of(part.slot, csv, part.rows))
    assert sum(part.rows.get("ledger_results", 0) for part in parts) > 0
    without_results = replace(staged, journal=tuple(parts))
    refuses(engine, without_results, "ledger_results took 0 rows, the tasks reported")


def test_a_row_written_by_two_tasks_of_a_round_is_refused(engine: Engine, staged) -> None:
    # The transfer's change of a1 handed over by another task of round 0 than a1's deposit.
    moved = [
        line
        for part in staged.journal
        for line in (part.csv("ledger_change_log") or b"").decode().splitlines()
        if at(3, line) and '"a1"' in line
    ]
    assert len(moved) == 1
    kept = tampered(
        staged, "ledger_change_log", lambda _, lines: [x for x in lines if x != moved[0]]
    )
    other = JournalPart.of("round0:99", {"ledger_change_log": (moved[0] + "\n").encode()}, {})
    two_tasks = replace(kept, journal=(*kept.journal, other))
    refuses(engine, two_tasks, "written by two tasks of round0")


def test_a_change_that_does_not_start_from_the_one_before_is_refused(
    engine: Engine, staged
) -> None:
    # a1 received 100, so the transfer's change of it starts from 100, not 99.
    def from_99(slot: str, lines: list[str]) -> list[str]:
        return [x.replace('"a1","100"', '"a1","99"') if at(3, x) else x for x in lines]

    refuses(
        engine,
        tampered(staged, "ledger_change_log", from_99),
        "does not start from the row's change before it",
    )


def test_changes_of_an_event_that_was_not_applied_are_refused(engine: Engine, staged) -> None:
    def rejected(slot: str, lines: list[str]) -> list[str]:
        return [x.replace('"applied"', '"rejected"') if at(3, x) else x for x in lines]

    refuses(engine, tampered(staged, "ledger_events", rejected), "out of place")


def test_request_ids_out_of_place_are_refused(engine: Engine, staged) -> None:
    def elsewhere(slot: str, lines: list[str]) -> list[str]:  # t1's request row at position 2
        return [x.replace('"t1",3,', '"t1",2,') for x in lines]

    refuses(engine, tampered(staged, "ledger_requests", elsewhere), "request ids out of place")


def test_the_staged_batch_commits_when_nothing_was_touched(engine: Engine, staged) -> None:
    report = commit_staged(engine, build_ledger(), staged)
    assert report.committed
    assert rows(engine, "SELECT key, value FROM accounts ORDER BY key") == [
        ("a0", 90),
        ("a1", 110),
        ("a2", 100),
    ]
    assert rows(engine, "SELECT count(*) FROM ledger_events") == [(4,)]
    assert rows(engine, "SELECT count(*) FROM ledger_stage_rows") == [(0,)]


TEXTS = st.none() | st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
REJECTION_ROWS = st.lists(
    st.tuples(
        st.integers(0, 2**31 - 1),
        TEXTS,
        TEXTS,
        st.text(max_size=5).filter(str.isprintable) | st.just("invalid_event"),
        st.text(st.characters(blacklist_categories=("Cs",)), max_size=12),
        st.binary(max_size=12),
    ),
    min_size=1,  # a task encodes a table only when it has rows of it
    max_size=6,
)


@settings(max_examples=200, deadline=None)
@given(rows=REJECTION_ROWS, batch_id=st.integers(0, 2**31 - 1))
def test_a_journal_table_encoded_from_columns_is_the_csv_encoded_from_rows(
    rows: list[tuple], batch_id: int
) -> None:
    """The tasks encode their journal from Arrow columns (`journal_csv`); the rows' encoding
    (`csv_of`) is the reference, byte for byte."""
    names = JOURNAL_COLUMNS["ledger_rejections"]
    columns = dict(zip(names, zip(*rows, strict=True), strict=True))
    types = [pa.int32(), pa.string(), pa.string(), pa.string(), pa.string(), pa.binary()]
    arrays = {
        name: pa.array(list(columns[name]), kind) for name, kind in zip(names, types, strict=True)
    }
    assert journal_csv(batch_id, arrays) == csv_of({"batch_id": batch_id}, names, rows)
