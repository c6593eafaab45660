"""Tasks stage a batch in PostgreSQL: values survive COPY exactly, a task that runs again
replaces its earlier attempt, and the commit refuses staging that is not what the tasks
reported."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, text

from ledger_engine.apps.bank import build_ledger
from ledger_engine.pipeline import BatchProcessor, files_frame
from ledger_engine.store.commit import CommitRefused, commit_staged
from ledger_engine.store.lease import RunLease, run_lease
from ledger_engine.store.staging import Stager, dsn_of

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


def rows(engine: Engine, query: str, **params) -> list[tuple]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(query), params)]


def dsn(engine: Engine) -> str:
    return dsn_of(engine.url.render_as_string(hide_password=False))


@pytest.fixture
def lease(engine: Engine) -> Iterator[RunLease]:
    """The run lease, held for the test: staging checks it."""
    with run_lease(engine, "pytest") as held:
        yield held


def test_text_bytes_and_nulls_survive_staging_exactly(engine: Engine, lease: RunLease) -> None:
    stager = Stager(dsn(engine), 7, "test:0", lease.epoch)
    for position, value in enumerate(HOSTILE):
        stager.add(
            "ledger_stage_rejections",
            (position, value, None, "aborted", value, value.encode() + b"\x00\xff"),
        )
        stager.add("ledger_stage_results", (position, 0, "s", value or "r", json.dumps(value)))
    assert stager.commit()["ledger_stage_rejections"] == len(HOSTILE)
    stored = rows(
        engine,
        "SELECT stream, request_id, detail, raw_input FROM ledger_stage_rejections"
        " ORDER BY position",
    )
    assert [(s, r, d, bytes(raw)) for s, r, d, raw in stored] == [
        (v, None, v, v.encode() + b"\x00\xff") for v in HOSTILE
    ]
    payloads = rows(engine, "SELECT payload FROM ledger_stage_results ORDER BY position")
    assert payloads == [(v,) for v in HOSTILE]


def test_a_task_staging_its_slot_again_replaces_its_earlier_attempt(
    engine: Engine, lease: RunLease
) -> None:
    for attempt in range(3):
        stager = Stager(dsn(engine), 1, "round0:1", lease.epoch)
        stager.add("ledger_stage_duplicates", (attempt, "s", "r", "exists"))
        stager.commit()
    other = Stager(dsn(engine), 1, "round0:2", lease.epoch)
    other.add("ledger_stage_duplicates", (9, "s", "r", "exists"))
    other.commit()
    assert rows(engine, "SELECT slot, position FROM ledger_stage_duplicates ORDER BY slot") == [
        ("round0:1", 2),
        ("round0:2", 9),
    ]


def test_an_abandoned_attempt_stages_nothing(engine: Engine, lease: RunLease) -> None:
    stager = Stager(dsn(engine), 1, "round0:0", lease.epoch)
    stager.add("ledger_stage_duplicates", (0, "s", "r", "exists"))
    stager.flush()
    stager.abandon()
    assert rows(engine, "SELECT count(*) FROM ledger_stage_duplicates") == [(0,)]


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
    batch, run = processor.stage(0, files_frame(spark, [("b.jsonl", content)]))
    assert batch is not None and run is not None
    yield batch
    run.release()


def tamper(engine: Engine, statement: str) -> None:
    with engine.begin() as conn:
        conn.execute(text(statement))


def refuses(engine: Engine, batch, message: str) -> None:
    with pytest.raises(CommitRefused, match=message):
        commit_staged(engine, build_ledger(), batch)
    assert rows(engine, "SELECT count(*) FROM ledger_batches") == [(0,)]
    assert rows(engine, "SELECT count(*) FROM accounts") == [(0,)]


def test_a_row_staged_twice_is_refused(engine: Engine, staged) -> None:
    tamper(
        engine,
        "INSERT INTO ledger_stage_change_log SELECT * FROM ledger_stage_change_log"
        " WHERE position = 3",
    )
    refuses(engine, staged, "ledger_stage_change_log holds .* rows, the tasks staged")


def test_a_missing_event_is_refused(engine: Engine, staged) -> None:
    tamper(engine, "DELETE FROM ledger_stage_events WHERE position = 1")
    refuses(engine, staged, "ledger_stage_events holds 3 rows")


def test_a_row_written_by_two_tasks_of_a_round_is_refused(engine: Engine, staged) -> None:
    # The transfer's change of a1 staged by another task of round 0 than a1's deposit.
    tamper(
        engine,
        "UPDATE ledger_stage_change_log SET slot = 'round0:99' WHERE key = 'a1' AND position = 3",
    )
    refuses(engine, staged, "written by two tasks")


def test_a_change_that_does_not_start_from_the_one_before_is_refused(
    engine: Engine, staged
) -> None:
    # a1 received 100, so the transfer's change of it starts from 100, not 99.
    tamper(
        engine,
        "UPDATE ledger_stage_change_log SET before = '99' WHERE key = 'a1' AND position = 3",
    )
    refuses(engine, staged, "does not start from the row's change before it")


def test_staged_changes_of_an_event_that_was_not_applied_are_refused(
    engine: Engine, staged
) -> None:
    tamper(engine, "UPDATE ledger_stage_events SET outcome = 'rejected' WHERE position = 3")
    refuses(engine, staged, "out of place")


def test_the_staged_batch_commits_when_nothing_was_touched(engine: Engine, staged) -> None:
    report = commit_staged(engine, build_ledger(), staged)
    assert report.committed
    assert rows(engine, "SELECT key, value FROM accounts ORDER BY key") == [
        ("a0", 90),
        ("a1", 110),
        ("a2", 100),
    ]
    assert rows(engine, "SELECT count(*) FROM ledger_stage_events") == [(0,)]
