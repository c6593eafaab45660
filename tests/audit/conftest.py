"""Fixtures for the audit tests: the bank workload (tests/support/bank_workload.py) committed
once per module, per test, or as the pipeline commits it, audit included (PostgreSQL fixtures
are shared, in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import Engine

from ledger_engine.store.database import connect
from tests.support.bank_workload import audit_settings, bank_batches, commit_bank_workload


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


@pytest.fixture(scope="module")
def project_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One Great Expectations project for a module's runs: created by the first, reused (and
    found current) by the others, as in production."""
    return tmp_path_factory.mktemp("expectations")


@pytest.fixture
def ledger_url(audited_ledger_url: str, make_database_url: Callable[..., str]) -> str:
    """A copy of the module's audited ledger (`audited_ledger_url`), for one test alone (a
    module on another ledger names its own `ledger_url`)."""
    return make_database_url(template=audited_ledger_url)
