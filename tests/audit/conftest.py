"""Fixtures for the audit tests: committed bank workloads (PostgreSQL fixtures are shared,
in tests/conftest.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import Engine

from ledger_engine.pipeline import BatchSummary
from ledger_engine.store.database import connect

# --- Committing workloads ------------------------------------------------------------------


def jsonl(*lines: dict[str, Any] | str) -> bytes:
    """A JSON-lines file: dicts become JSON envelopes, strings are kept as they are (lines that
    are deliberately not valid events)."""
    return b"".join(
        (json.dumps(line) if isinstance(line, dict) else line).encode() + b"\n" for line in lines
    )


def deposit(request_id: Any, account: str, asset: str, amount: Any, asset_amount: Any) -> dict:
    payload = {
        "account_id": account,
        "asset_id": asset,
        "amount": amount,
        "asset_amount": asset_amount,
    }
    return {"stream": "deposits", "request_id": request_id, "payload": payload}


def transfer(
    request_id: str,
    source: str,
    target: str,
    amount: int,
    assets: tuple[str, str],
    asset_amount: int,
) -> dict:
    payload = {
        "source_account_id": source,
        "target_account_id": target,
        "source_asset_id": assets[0],
        "target_asset_id": assets[1],
        "amount": amount,
        "asset_amount": asset_amount,
    }
    return {"stream": "transfers", "request_id": request_id, "payload": payload}


def commit_bank_workload(commit_files: Callable[..., BatchSummary], engine: Engine) -> None:
    """Two batches of the bank app with every kind of outcome.

    Final state: accounts alice 90, bob 80, carol 50, dave 5; asset_ledger gold 9, silver 8,
    bronze 5, tin 1 (totals 225 and 23: the applied deposits).
    """
    gold_silver, silver_bronze, bronze_gold = (
        ("gold", "silver"),
        ("silver", "bronze"),
        ("bronze", "gold"),
    )
    batch0 = jsonl(
        deposit("d1", "alice", "gold", 100, 10),
        deposit("d2", "bob", "silver", 50, 5),
        deposit("d3", "carol", "bronze", 70, 7),
        transfer("t1", "alice", "bob", 30, gold_silver, 3),  # SUCCESS
        transfer("t2", "bob", "carol", 1000, silver_bronze, 1),  # REJECT: bob cannot afford it
        "this line is not JSON",  # rejected: invalid_event, no request id
        deposit("d4", "alice", "gold", -5, 1),  # rejected: aborted (amount must be positive)
        deposit("d1", "alice", "gold", 100, 10),  # duplicate: exists
        deposit("", "alice", "gold", 1, 1),  # rejected: invalid request id ''
        deposit("", "bob", "gold", 1, 1),  # rejected again: '' is never taken
        deposit(7, "carol", "gold", 1, 1),  # rejected: request id 7 is not a string
    )
    batch1 = jsonl(
        transfer("t1", "alice", "bob", 999, gold_silver, 3),  # duplicate: different payload
        deposit("d4", "alice", "gold", -5, 1),  # duplicate of a rejected event
        transfer("t3", "carol", "alice", 20, bronze_gold, 2),  # SUCCESS
        {"stream": "balance_lookups", "request_id": "b1", "payload": {"account_id": "alice"}},
        deposit("7", "dave", "tin", 5, 1),  # applied: '7' is a valid id, unlike 7 above
    )
    commit_files(engine, 0, [("inbox/0001.jsonl", batch0)])
    commit_files(engine, 1, [("inbox/0002.jsonl", batch1)])


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
