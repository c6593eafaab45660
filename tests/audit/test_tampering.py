"""Changes made to the system of record behind the engine's back, one per case: each is detected
by `ledger verify` and by at least one Great Expectations expectation, and both name the exact
table and key, or batch, that was changed.

Every case starts from a copy of one committed ledger (the bank workload of
tests/support/bank_workload.py: accounts alice 90, bob 80, carol 50, dave 5 after batches 0
and 1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import text

from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.audit.expectations.run import run_expectations
from ledger_engine.audit.findings import CheckResult
from ledger_engine.audit.proof.verify import verify_ledger
from ledger_engine.store.database import connect
from tests.support.checks import failures

LEDGER = build_ledger()


@dataclass(frozen=True)
class Tamper:
    """A change behind the engine's back and where each audit must say it happened."""

    statements: tuple[str, ...]
    verify_check: str  # the `ledger verify` check that fails...
    verify_finding: str  # ...with a finding that contains this
    expectation: str  # the expectation that fails...
    expectation_finding: str  # ...with a finding that contains this


# The applied deposit of request '7' (dave) is batch 1's last event.
_FORGED_RESULT = (
    "INSERT INTO ledger_results (batch_id, position, seq, stream, request_id, payload)"
    " SELECT batch_id, position, 1, 'deposit_results', request_id, '{\"status\": \"SUCCESS\"}'"
    " FROM ledger_events WHERE request_id = '7' AND outcome = 'applied'"
)
# alice's first change in the accounts change log (her opening deposit, batch 0).
_FIRST_ALICE_CHANGE = (
    "DELETE FROM ledger_change_log WHERE (batch_id, position, seq) = ("
    " SELECT batch_id, position, seq FROM ledger_change_log"
    " WHERE table_name = 'accounts' AND key = 'alice'"
    " ORDER BY batch_id, position, seq LIMIT 1)"
)

CASES = {
    "update one balance": Tamper(
        ("UPDATE accounts SET value = value + 1000 WHERE key = 'bob'",),
        "merkle root of accounts",
        'table accounts, key "bob": recorded 80, found 1080',
        "accounts equals the fold of its change log",
        "key='bob'",
    ),
    "delete one change-log row": Tamper(
        (_FIRST_ALICE_CHANGE,),
        "batch counts equal the rows they describe",
        "batch 0: changes recorded",
        "accounts change log is an unbroken chain",
        "key='alice'",
    ),
    "insert a forged result": Tamper(
        (_FORGED_RESULT,),
        "batch counts equal the rows they describe",
        "batch 1: results recorded 2, found 3",
        "batch counts equal the rows they describe",
        "batch_id=1, field='results', recorded=2, found=3",
    ),
    "alter a batch row's count": Tamper(
        ("UPDATE ledger_batches SET results = results + 1 WHERE batch_id = 1",),
        "batch hash chain",
        "first broken link: batch 1",
        "batch counts equal the rows they describe",
        "batch_id=1, field='results', recorded=3, found=2",
    ),
    "reorder two batch rows' hashes": Tamper(
        (
            # batch_hash is unique: move both aside first, then swap.
            "UPDATE ledger_batches SET batch_hash = 'x' || batch_hash",
            "UPDATE ledger_batches SET batch_hash = CASE batch_id"
            " WHEN 0 THEN (SELECT substr(batch_hash, 2) FROM ledger_batches WHERE batch_id = 1)"
            " ELSE (SELECT substr(batch_hash, 2) FROM ledger_batches WHERE batch_id = 0) END",
        ),
        "batch hash chain",
        "first broken link: batch 0",
        "batch rows chain by hash",
        "batch_id=1",
    ),
    "delete an account row": Tamper(
        ("DELETE FROM accounts WHERE key = 'carol'",),
        "merkle root of accounts",
        'table accounts, key "carol": recorded 50, found no row',
        "accounts equals the fold of its change log",
        "key='carol'",
    ),
}


@pytest.fixture
def audits(
    committed_ledger_url: str, make_database_url: Callable[..., str], project_root: Path
) -> Callable[[tuple[str, ...]], tuple[list[CheckResult], list[CheckResult]]]:
    """Tamper with a copy of the committed ledger; return what verify and the expectations
    say about it."""

    def run(statements: tuple[str, ...]) -> tuple[list[CheckResult], list[CheckResult]]:
        url = make_database_url(template=committed_ledger_url)
        engine = connect(url)
        try:
            with engine.begin() as conn:
                for statement in statements:
                    conn.execute(text(statement))
            return verify_ledger(engine, LEDGER), run_expectations(url, LEDGER, project_root)
        finally:
            engine.dispose()

    return run


def test_the_untouched_ledger_passes_every_audit(audits) -> None:
    verified, expected = audits(())
    assert failures(verified) == {}
    assert failures(expected) == {}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_each_tamper_is_detected_and_located_by_verify_and_an_expectation(
    audits, case: str
) -> None:
    tamper = CASES[case]
    verified, expected = audits(tamper.statements)

    verify_failures = failures(verified)
    assert tamper.verify_check in verify_failures, verify_failures
    assert any(tamper.verify_finding in f for f in verify_failures[tamper.verify_check]), (
        verify_failures[tamper.verify_check]
    )
    expectation_failures = failures(expected)
    assert tamper.expectation in expectation_failures, expectation_failures
    assert any(tamper.expectation_finding in f for f in expectation_failures[tamper.expectation]), (
        expectation_failures[tamper.expectation]
    )
