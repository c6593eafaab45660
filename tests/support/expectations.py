"""The whole-ledger Great Expectations audit (`run_expectations`) as the audit tests run and
read it: the bank's ledger (`LEDGER`), the names of its checks, in the order the suites report
them (`ALL_CHECKS`: the integrity suite's, then the reconciliation's, `RECONCILED_CHECKS`), a
run's results by name (`audit`, `by_name`) and the failed ones (`failed`); changes made behind
the engine's back (`tamper`, `forge_executed_event`); and the files of a Great Expectations
project that are committed (`committed_files`)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from sqlalchemy import text

from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.audit.expectations.rules import RECONCILIATION, SUITE
from ledger_engine.audit.expectations.run import run_expectations
from ledger_engine.audit.findings import CheckResult
from ledger_engine.store.database import connect

LEDGER = build_ledger()
FOLD_ACCOUNTS = "accounts equals the fold of its change log"
FOLD_ASSETS = "asset_ledger equals the fold of its change log"
CHAIN_ACCOUNTS = "accounts change log is an unbroken chain"
CHAIN_ASSETS = "asset_ledger change log is an unbroken chain"
LINKS = "change links follow each key's chain"
MONEY_ACCOUNTS = "accounts total equals applied deposits and adjustments"
MONEY_ASSETS = "asset_ledger total equals applied deposits"
TRANSFERS_ACCOUNTS = "applied transfers move nothing in accounts"
TRANSFERS_ASSETS = "applied transfers move nothing in asset_ledger"
NO_NEGATIVE_BALANCE = "no account balance below 0"
NO_NEGATIVE_ASSET = "no asset amount below 0"
ACCOUNTED = "every ingested event is accounted for exactly once"
UNIQUE_REQUESTS = "request ids are unique among executed events"
CONTIGUOUS_BATCHES = "batch rows are contiguous"
BATCH_COUNTS = "batch counts equal the rows they describe"
HASH_CHAIN = "batch rows chain by hash"
# The reconciliation's rules (tests/audit/test_reconciliation_expectations.py), reported as a
# suite of their own.
RECONCILED_CHECKS = [
    "reconciled statement entries are each matched or open once",
    "reconciled ledger changes are each matched or open once per source",
    "no reconciled item is in two matches",
    "reconciliation matches keep their rules' tolerances",
]
ALL_CHECKS = [
    FOLD_ACCOUNTS,
    FOLD_ASSETS,
    CHAIN_ACCOUNTS,
    CHAIN_ASSETS,
    LINKS,
    MONEY_ACCOUNTS,
    MONEY_ASSETS,
    TRANSFERS_ACCOUNTS,
    TRANSFERS_ASSETS,
    NO_NEGATIVE_BALANCE,
    NO_NEGATIVE_ASSET,
    ACCOUNTED,
    UNIQUE_REQUESTS,
    CONTIGUOUS_BATCHES,
    BATCH_COUNTS,
    HASH_CHAIN,
    *RECONCILED_CHECKS,
]


def by_name(results: list[CheckResult], names: list[str]) -> dict[str, CheckResult]:
    """A suite's results by check name, asserting they are `names` in that order."""
    assert [r.name for r in results] == names
    assert all(
        r.suite == (RECONCILIATION if r.name in RECONCILED_CHECKS else SUITE) for r in results
    )
    return {r.name: r for r in results}


def audit(database_url: str, project_root: Path) -> dict[str, CheckResult]:
    return by_name(run_expectations(database_url, LEDGER, project_root), ALL_CHECKS)


def failed(results: dict[str, CheckResult]) -> set[str]:
    return {name for name, result in results.items() if not result.passed}


def tamper(database_url: str, *statements: str) -> None:
    """Run `statements` in one transaction, as someone going around the engine would."""
    engine = connect(database_url)
    try:
        with engine.begin() as conn:
            for statement in statements:
                conn.execute(text(statement))
    finally:
        engine.dispose()


_FORGED_EVENT = text(
    "INSERT INTO ledger_events"
    " (batch_id, position, source_file, line_number, stream, request_id, payload, outcome)"
    " SELECT 1, MAX(position) + 1, 'forged.jsonl', 1, :stream, :request_id,"
    " CAST(:payload AS jsonb), :outcome FROM ledger_events WHERE batch_id = 1"
)


def forge_executed_event(
    database_url: str, request_id: str, stream: str, payload: str | None, outcome: str
) -> None:
    """Add an executed event with a taken request id at the end of batch 1, as someone with
    enough rights to drop the schema's guard (the unique index on executed ids) would."""
    tamper(database_url, "DROP INDEX ledger_events_executed_request_id")
    engine = connect(database_url)
    try:
        with engine.begin() as conn:
            conn.execute(
                _FORGED_EVENT,
                {
                    "stream": stream,
                    "request_id": request_id,
                    "payload": payload,
                    "outcome": outcome,
                },
            )
    finally:
        engine.dispose()


def committed_files(root: Path) -> dict[str, str]:
    """Each file under `root` but Great Expectations' uncommitted ones, with its SHA-256."""
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file() and "uncommitted" not in path.relative_to(root).parts
    }
