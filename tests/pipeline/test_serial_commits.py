"""`tests.support.serial_commit.SerialCommits`, the tests' way to commit batches without Spark,
writes what the pipeline writes for the same files: every journal row, the table rows, the
Merkle roots and the batch rows with their hashes (timings and commit times apart)."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Engine

from ledger_engine.apps.bank.ledger import build_ledger
from tests.support.bank import deposit, fee_transfer, transfer
from tests.support.database import rows
from tests.support.events import event_file
from tests.support.serial_commit import SerialCommits

BATCHES = [
    [
        ("0001.jsonl", [deposit("d1", "alice", 10_000, reference="R1"), deposit("d2", "bob", 50)]),
        ("0002.jsonl", [deposit("d3", "alice", 7, value_date="2026-11-02")]),
    ],
    [
        (
            "0003.jsonl",
            [
                transfer("t1", "alice", "bob", 300),
                fee_transfer("f1", "alice", "carol", 20, fee=2, fee_account="fees"),
                deposit("d4", "bob", 1),
            ],
        )
    ],
]
# What the two commits must share: every column but timings and commit times.
STORED = {
    "ledger_batches": "batch_id, ledger, input_fingerprint, input_files, events_ingested,"
    " applied, rejected, duplicates, changes, results, merkle_roots, prev_hash, batch_hash",
    "ledger_events": "*",
    "ledger_change_log": "*",
    "ledger_results": "*",
    "ledger_requests": "*",
    "ledger_merkle_buckets": "*",
    "accounts": "*",
    "asset_ledger": "*",
}


def stored(engine: Engine) -> dict[str, list[tuple]]:
    """The rows of each table of `STORED`, in one order whatever order they were read in."""
    return {
        table: sorted(rows(engine, f"SELECT {columns} FROM {table}"), key=repr)
        for table, columns in STORED.items()
    }


def test_a_serial_commit_stores_what_the_pipeline_stores(
    engine: Engine,
    make_database_url: Callable[..., str],
    engine_on: Callable[[str], Engine],
    commit_files,
):
    serial_engine = engine_on(make_database_url())
    commits = SerialCommits(serial_engine, build_ledger())

    for batch_id, files in enumerate(BATCHES):
        landed = [(name, event_file(events)) for name, events in files]
        commit_files(engine, batch_id, landed)
        commits.commit(landed)

    expected = stored(engine)
    assert expected["ledger_change_log"] and len(expected["ledger_batches"]) == 2
    assert stored(serial_engine) == expected
