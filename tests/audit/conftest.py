"""Fixtures for the audit tests: committed bank workloads (PostgreSQL fixtures are shared,
in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import Engine

from ledger_engine.config import Settings
from ledger_engine.pipeline.job import BatchSummary
from ledger_engine.store.database import connect
from tests.support.bank import deposit, lookup, transfer
from tests.support.events import event_file

# --- Committing workloads ------------------------------------------------------------------


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


@pytest.fixture(scope="module")
def committed_ledger_url(module_database_url: str, commit_files) -> str:
    """The bank workload (`commit_bank_workload`), committed once per test module; tests that
    change it work on copies (`make_database_url(template=committed_ledger_url)`)."""
    engine = connect(module_database_url)
    try:
        commit_bank_workload(commit_files, engine)
    finally:
        engine.dispose()
    return module_database_url


@pytest.fixture
def bank_database_url(database_url: str, engine: Engine, commit_files) -> str:
    """A fresh database holding the committed bank workload (`commit_bank_workload`)."""
    commit_bank_workload(commit_files, engine)
    return database_url


@pytest.fixture
def bank_workload(commit_files) -> Callable[[Engine], None]:
    """`commit_bank_workload`, for tests that fill more than one database."""
    return lambda engine: commit_bank_workload(commit_files, engine)


@pytest.fixture(scope="module")
def audited_ledger_url(
    module_database_url: str, commit_files, tmp_path_factory: pytest.TempPathFactory
) -> str:
    """The bank workload committed as the pipeline commits it, audit included: batch 0, its
    passing batch audit (`ledger audit`: a mark through batch 0), then batch 1, not audited
    yet. The next batch audit's scope is batch 1. Once per test module; tests that change it
    work on copies (`make_database_url(template=audited_ledger_url)`)."""
    from ledger_engine.tasks.audit_runs import run_audits

    batch0, batch1 = bank_batches()
    engine = connect(module_database_url)
    try:
        commit_files(engine, 0, [("inbox/0001.jsonl", batch0)])
        data_dir = tmp_path_factory.mktemp("first-audit")
        first, _ = run_audits(
            audit_settings(module_database_url, data_dir),
            engine=engine,
            expectations_root=data_dir / "expectations",
        )
        assert first.passed, first.failures()
        commit_files(engine, 1, [("inbox/0002.jsonl", batch1)])
    finally:
        engine.dispose()
    return module_database_url


def audit_settings(url: str, data_dir: Path) -> Settings:
    """The settings of a `ledger` command on the database `url` (reports under `data_dir`)."""
    return Settings.from_env({"LEDGER_DATABASE_URL": url, "LEDGER_DATA_DIR": str(data_dir)})
