"""The Great Expectations batch suite (`ledger_batch_integrity`) on a real PostgreSQL: its rules
read their scope from the marks, pass on what the engine committed, and name what is wrong
across the scope's edge (a key's first change in scope against its change before the scope, a
request id of the scope against an event before it).

The ledger is `audited_ledger_url` (tests/audit/conftest.py): batch 0 audited, batch 1 in
scope. Each test works on a copy.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sqlalchemy import text

from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.audit.expectations.run import DEFAULT_PROJECT_ROOT, run_batch_expectations
from ledger_engine.audit.findings import CheckResult
from ledger_engine.store.database import connect
from tests.support.expectations import (
    CONTIGUOUS_BATCHES,
    by_name,
    committed_files,
    failed,
    forge_executed_event,
    tamper,
)
from tests.support.expectations import (
    audit as audit_whole_ledger,
)

LEDGER = build_ledger()
FOLD = "accounts keys written in scope hold their last change"
CHAIN_ACCOUNTS = "accounts change log in scope continues its chain"
MONEY_ACCOUNTS = "accounts total equals applied deposits and adjustments, in scope"
ACCOUNTED = "every event in scope is accounted for exactly once"
UNIQUE = "request ids in scope are unique among executed events"
COUNTS = "batch counts in scope equal the rows they describe"
ALL_CHECKS = [
    FOLD,
    "asset_ledger keys written in scope hold their last change",
    CHAIN_ACCOUNTS,
    "asset_ledger change log in scope continues its chain",
    MONEY_ACCOUNTS,
    "asset_ledger total equals applied deposits, in scope",
    "applied transfers move nothing in accounts, in scope",
    "applied transfers move nothing in asset_ledger, in scope",
    "no account balance below 0, in scope",
    "no asset amount below 0, in scope",
    ACCOUNTED,
    UNIQUE,
    "batch rows in scope are contiguous",
    COUNTS,
    "batch rows in scope chain by hash",
]


def audit(url: str, project_root: Path) -> dict[str, CheckResult]:
    return by_name(run_batch_expectations(url, LEDGER, project_root), ALL_CHECKS)


def test_every_rule_passes_on_what_the_engine_committed(ledger_url: str, project_root: Path):
    assert failed(audit(ledger_url, project_root)) == set()


def test_the_scope_is_the_batches_after_the_last_mark(ledger_url: str, project_root: Path):
    engine = connect(ledger_url)
    try:
        with engine.connect() as conn:
            scope = tuple(conn.execute(text("SELECT * FROM ledger_audit_scope")).one())
    finally:
        engine.dispose()
    # bob's change in batch 0 is out of scope; dave's in batch 1 is in it.
    tamper(
        ledger_url,
        "UPDATE accounts SET value = value + 1 WHERE key IN ('bob', 'dave')",
    )

    results = audit(ledger_url, project_root)

    assert scope == (1, 1)
    assert failed(results) == {FOLD}
    (finding,) = results[FOLD].findings
    assert finding.startswith("key='dave', state_value=6, change_log_value=5")


def test_a_keys_first_change_in_scope_must_continue_from_its_change_before_the_scope(
    ledger_url: str, project_root: Path
):
    # alice's last change of batch 0 (before the scope) is made to end at 71 instead of 70;
    # her first change of batch 1 (t3 pays her 20) starts from 70.
    tamper(
        ledger_url,
        "UPDATE ledger_change_log SET after = '71' WHERE (batch_id, position, seq) = ("
        " SELECT batch_id, position, seq FROM ledger_change_log"
        " WHERE table_name = 'accounts' AND key = 'alice' AND batch_id = 0"
        " ORDER BY position DESC, seq DESC LIMIT 1)",
    )

    results = audit(ledger_url, project_root)

    assert failed(results) == {CHAIN_ACCOUNTS}
    assert results[CHAIN_ACCOUNTS].findings == (
        "key='alice', batch_id=1, position=2, seq=1, before=70, previous_after=71,"
        " problem='before differs from the after of the change before'",
    )


def test_a_key_first_written_in_scope_must_start_from_nothing(ledger_url: str, project_root: Path):
    tamper(
        ledger_url,
        "UPDATE ledger_change_log SET before = '3' WHERE table_name = 'accounts' AND key = 'dave'",
    )

    results = audit(ledger_url, project_root)

    assert failed(results) == {CHAIN_ACCOUNTS, MONEY_ACCOUNTS}
    assert results[CHAIN_ACCOUNTS].findings == (
        "key='dave', batch_id=1, position=4, seq=0, before=3, previous_after=None,"
        " problem='first change does not start from nothing'",
    )
    assert results[MONEY_ACCOUNTS].findings == (
        "batch_id=1, net_change='0.02 EUR', sources='0.05 EUR', difference='-0.03 EUR'",
    )


def test_an_applied_transfer_that_does_not_net_to_zero_is_named_with_its_entries(
    ledger_url: str, project_root: Path
):
    # t3 (carol pays alice 20, position 2 of batch 1) is made to credit alice 21.
    tamper(
        ledger_url,
        "UPDATE ledger_change_log SET after = '91'"
        " WHERE (batch_id, position) = (1, 2) AND table_name = 'accounts' AND key = 'alice'",
    )

    results = audit(ledger_url, project_root)

    transfers = "applied transfers move nothing in accounts, in scope"
    assert failed(results) == {FOLD, MONEY_ACCOUNTS, transfers}
    assert results[transfers].findings == (
        "request_id='t3', batch_id=1, position=2, stream='transfers', changes=2,"
        " net_change='0.01 EUR'",
    )
    assert results[MONEY_ACCOUNTS].findings == (
        "batch_id=1, net_change='0.06 EUR', sources='0.05 EUR', difference='0.01 EUR'",
    )


def test_a_key_written_in_scope_below_the_minimum_is_named_with_its_value(
    ledger_url: str, project_root: Path
):
    tamper(ledger_url, "UPDATE accounts SET value = -1 WHERE key = 'dave'")

    results = audit(ledger_url, project_root)

    minimum = "no account balance below 0, in scope"
    assert failed(results) == {FOLD, minimum}
    assert results[minimum].findings == ("key='dave', value='-0.01 EUR', minimum='0.00 EUR'",)
    assert results[FOLD].findings == (
        "key='dave', state_value=-1, change_log_value=5, last_change_batch=1,"
        " last_change_position=4, problem='value differs from the change log'",
    )


def test_a_request_id_of_the_scope_executed_before_it_too_fails_uniqueness(
    ledger_url: str, project_root: Path
):
    forge_executed_event(ledger_url, "d2", "balance_lookups", '{"account_id": "bob"}', "applied")

    results = audit(ledger_url, project_root)

    assert failed(results) == {UNIQUE, ACCOUNTED, COUNTS}
    assert results[UNIQUE].findings == (
        "request_id='d2', executed_events=2,"
        " events='applied in batch 0 at position 1; applied in batch 1 at position 5'",
    )
    assert results[ACCOUNTED].findings == (
        "batch_id=1, position=5, outcome='applied', request_id='d2',"
        " problem='its executed request id points to batch 0, position 1'",
    )


def test_events_of_the_scope_missing_their_rows_are_named_by_batch_and_position(
    ledger_url: str, project_root: Path
):
    tamper(
        ledger_url,
        "DELETE FROM ledger_duplicates WHERE (batch_id, position) = (1, 0)",
        "DELETE FROM ledger_results WHERE request_id = '7'",
        "UPDATE ledger_events SET outcome = 'rejected' WHERE request_id = '7'",
    )

    results = audit(ledger_url, project_root)

    assert ACCOUNTED in failed(results)
    assert results[ACCOUNTED].findings == (
        "batch_id=1, position=0, outcome='duplicate', request_id='t1',"
        " problem='duplicate event without its duplicate row'",
        "batch_id=1, position=4, outcome='rejected', request_id='7',"
        " problem='change-log entries of an event that was rejected;"
        " executed request id says applied, the event was rejected;"
        " rejected event without its rejection'",
    )


def test_the_committed_context_is_current_for_the_batch_suite(database_url: str, tmp_path: Path):
    """`expectations/gx` in the repository is what `run_batch_expectations` would write (run
    `ledger audit` once and commit `expectations/gx` if this fails)."""
    copy = tmp_path / "expectations"
    shutil.copytree(
        DEFAULT_PROJECT_ROOT / "gx", copy / "gx", ignore=shutil.ignore_patterns("uncommitted")
    )
    before = committed_files(copy)

    results = run_batch_expectations(database_url, LEDGER, copy)

    assert results and all(r.passed for r in results)
    assert committed_files(copy) == before
    assert (copy / "gx" / "expectations" / "ledger_batch_integrity.json").is_file()


CONTIGUOUS = "batch rows in scope are contiguous"


def test_rows_forged_past_the_newest_batch_are_named_and_below_zero_left_to_the_whole_ledger(
    ledger_url: str, project_root: Path
):
    """Rows forged into a batch after the newest (batch 1) are found by the scope's contiguity
    rule; rows forged into a batch below 0 lie before the scope (which starts at batch 1), and
    the whole-ledger suite's rule, whose scope starts at batch 0, finds both."""
    tamper(
        ledger_url,
        "INSERT INTO ledger_results (batch_id, position, seq, stream, request_id, payload)"
        " SELECT 5, position, seq, stream, request_id, payload FROM ledger_results"
        " WHERE batch_id = 1 LIMIT 1",
        "INSERT INTO ledger_duplicates (batch_id, position, stream, request_id, kind)"
        " SELECT -3, position, stream, request_id, kind FROM ledger_duplicates"
        " WHERE batch_id = 1 LIMIT 1",
    )

    results = audit(ledger_url, project_root)
    whole_ledger = audit_whole_ledger(ledger_url, project_root)

    orphan = "problem='rows of a batch that has no batch row'"
    assert failed(results) == {CONTIGUOUS}
    assert results[CONTIGUOUS].findings == (f"batch_id=5, table_name='ledger_results', {orphan}",)
    assert whole_ledger[CONTIGUOUS_BATCHES].findings == (
        f"batch_id=-3, table_name='ledger_duplicates', {orphan}",
        f"batch_id=5, table_name='ledger_results', {orphan}",
    )


def test_the_newest_batch_row_deleted_leaves_its_rows_past_the_newest_named(
    ledger_url: str, project_root: Path
):
    """Without batch 1's row, batch 0 is the newest: batch 1's rows lie past it."""
    tamper(ledger_url, "DELETE FROM ledger_batches WHERE batch_id = 1")

    results = audit(ledger_url, project_root)

    orphan = "problem='rows of a batch that has no batch row'"
    assert CONTIGUOUS in failed(results)
    assert results[CONTIGUOUS].findings == (
        f"batch_id=1, table_name='ledger_change_log', {orphan}",
        f"batch_id=1, table_name='ledger_duplicates', {orphan}",
        f"batch_id=1, table_name='ledger_events', {orphan}",
        f"batch_id=1, table_name='ledger_results', {orphan}",
    )
