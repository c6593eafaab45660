"""The bank workload the audit tests commit: two batches (one file each) with every kind of
outcome (`bank_batches`), committed as batches 0 and 1 (`commit_bank_workload`); and the
settings of a `ledger` command on a test database (`audit_settings`), as the audit tests run
one. The fixtures that commit the workload are in tests/audit/conftest.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sqlalchemy import Engine

from ledger_engine.config import Settings
from ledger_engine.pipeline.job import BatchSummary
from tests.support.bank import deposit, lookup, transfer
from tests.support.events import event_file


def bank_batches() -> tuple[bytes, bytes]:
    """The two batches (one file each) of the bank workload, with every kind of outcome.

    After both: accounts alice 90, bob 80, carol 50, dave 5; asset_ledger gold 9, silver 8,
    bronze 5, tin 1 (totals 225 and 23: the applied deposits). Batch 1 writes alice, carol and
    dave (gold, bronze and tin); bob and silver were last written in batch 0.
    """
    gold_silver, silver_bronze, bronze_gold = (
        ("gold", "silver"),
        ("silver", "bronze"),
        ("bronze", "gold"),
    )
    batch0 = [
        deposit("d1", "alice", 100, asset="gold", asset_amount=10),
        deposit("d2", "bob", 50, asset="silver", asset_amount=5),
        deposit("d3", "carol", 70, asset="bronze", asset_amount=7),
        # SUCCESS
        transfer("t1", "alice", "bob", 30, assets=gold_silver, asset_amount=3),
        # REJECT: bob cannot afford it
        transfer("t2", "bob", "carol", 1000, assets=silver_bronze, asset_amount=1),
        # rejected: invalid_event, no request id
        b"this line is not JSON",
        # rejected: aborted (amount must be positive)
        deposit("d4", "alice", -5, asset="gold", asset_amount=1),
        # duplicate: exists
        deposit("d1", "alice", 100, asset="gold", asset_amount=10),
        # rejected: invalid request id ''
        deposit("", "alice", 1, asset="gold", asset_amount=1),
        # rejected again: '' is never taken
        deposit("", "bob", 1, asset="gold", asset_amount=1),
        # rejected: request id 7 is not a string
        deposit(7, "carol", 1, asset="gold", asset_amount=1),
    ]
    batch1 = [
        # duplicate: different payload
        transfer("t1", "alice", "bob", 999, assets=gold_silver, asset_amount=3),
        # duplicate of a rejected event
        deposit("d4", "alice", -5, asset="gold", asset_amount=1),
        # SUCCESS
        transfer("t3", "carol", "alice", 20, assets=bronze_gold, asset_amount=2),
        lookup("b1", "alice"),
        # applied: '7' is a valid id, unlike 7 above
        deposit("7", "dave", 5, asset="tin", asset_amount=1),
    ]
    return event_file(batch0), event_file(batch1)


def commit_bank_workload(commit_files: Callable[..., BatchSummary], engine: Engine) -> None:
    """Both batches of the bank workload (`bank_batches`), as batches 0 and 1."""
    for batch_id, content in enumerate(bank_batches()):
        commit_files(engine, batch_id, [(f"inbox/000{batch_id + 1}.jsonl", content)])


def audit_settings(url: str, data_dir: Path) -> Settings:
    """The settings of a `ledger` command on the database `url` (reports under `data_dir`)."""
    return Settings.from_env({"LEDGER_DATABASE_URL": url, "LEDGER_DATA_DIR": str(data_dir)})
