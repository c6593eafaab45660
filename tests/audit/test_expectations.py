"""The Great Expectations audit on a real PostgreSQL: it passes on what the engine committed and
fails, naming the culprit, on each kind of change made behind the engine's back."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from sqlalchemy import Engine, make_url, text
from sqlalchemy.exc import IntegrityError, OperationalError

from ledger_engine.admission import INVALID_REQUEST_ID
from ledger_engine.audit.expectations import (
    DEFAULT_PROJECT_ROOT,
    SUITE,
    run_expectations,
)
from ledger_engine.audit.findings import CheckResult
from ledger_engine.store.database import connect

FOLD_ACCOUNTS = "accounts equals the fold of its change log"
FOLD_ASSETS = "asset_ledger equals the fold of its change log"
CHAIN_ACCOUNTS = "accounts change log is an unbroken chain"
CHAIN_ASSETS = "asset_ledger change log is an unbroken chain"
MONEY_ACCOUNTS = "accounts total equals applied deposits"
MONEY_ASSETS = "asset_ledger total equals applied deposits"
UNIQUE_REQUESTS = "request ids are unique among executed events"
NO_NEGATIVE_BALANCE = "no account balance below 0"
NO_NEGATIVE_ASSET = "no asset amount below 0"
ALL_CHECKS = [
    FOLD_ACCOUNTS,
    FOLD_ASSETS,
    CHAIN_ACCOUNTS,
    CHAIN_ASSETS,
    MONEY_ACCOUNTS,
    MONEY_ASSETS,
    UNIQUE_REQUESTS,
    NO_NEGATIVE_BALANCE,
    NO_NEGATIVE_ASSET,
]


@pytest.fixture(scope="module")
def project_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One Great Expectations project for the module's runs: created by the first, reused (and
    found current) by the others, as in production."""
    return tmp_path_factory.mktemp("expectations")


def audit(database_url: str, project_root: Path) -> dict[str, CheckResult]:
    results = run_expectations(database_url, project_root)
    assert [r.name for r in results] == ALL_CHECKS
    assert all(r.suite == SUITE for r in results)
    return {r.name: r for r in results}


def failed(results: dict[str, CheckResult]) -> set[str]:
    return {name for name, result in results.items() if not result.passed}


def tamper(database_url: str, statement: str) -> None:
    engine = connect(database_url)
    try:
        with engine.begin() as conn:
            conn.execute(text(statement))
    finally:
        engine.dispose()


def test_every_expectation_passes_on_what_the_engine_committed(
    bank_database_url: str, project_root: Path, capsys: pytest.CaptureFixture[str]
):
    engine = connect(bank_database_url)
    try:
        with engine.connect() as conn:
            outcomes = dict(
                conn.execute(text("SELECT outcome, COUNT(*) FROM ledger_events GROUP BY 1")).all()
            )
            statuses = [
                r[0] for r in conn.execute(text("SELECT payload ->> 'status' FROM ledger_results"))
            ]
            reused_ids = (
                conn.execute(
                    text(
                        "SELECT request_id FROM ledger_events WHERE outcome <> 'duplicate'"
                        " AND request_id IS NOT NULL GROUP BY 1 HAVING COUNT(*) > 1 ORDER BY 1"
                    )
                )
                .scalars()
                .all()
            )
            invalid_id_rejections = conn.execute(
                text(
                    "SELECT reason, detail FROM ledger_rejections"
                    " WHERE request_id IS NULL AND detail LIKE 'request_id%'"
                )
            ).all()
    finally:
        engine.dispose()
    # The workload has every kind of outcome the audit must not mistake for a fault.
    assert outcomes == {"applied": 8, "rejected": 5, "duplicate": 3}
    assert "REJECT" in statuses and "SUCCESS" in statuses
    # Events with invalid request ids ('', 7) are stored with none, so they take none...
    assert reused_ids == []
    # ...and are rejected with the reason and detail the engine records for them.
    assert invalid_id_rejections == [("invalid_event", INVALID_REQUEST_ID)] * 3

    results = audit(bank_database_url, project_root)

    assert failed(results) == set()
    assert all(r.findings == () for r in results.values())
    assert capsys.readouterr().out == ""  # Great Expectations' console noise is kept down


def test_data_docs_index_exists_after_a_run(bank_database_url: str, project_root: Path):
    results = audit(bank_database_url, project_root)

    links = {r.link for r in results.values()}
    assert len(links) == 1
    link = links.pop()
    assert link is not None and link.startswith("file://")
    index = Path(unquote(urlparse(link).path))
    assert index == project_root / "gx" / "uncommitted" / "data_docs" / "local_site" / "index.html"
    assert index.is_file()
    assert "ledger_integrity" in index.read_text(encoding="utf-8")


def test_a_balance_changed_behind_the_engine_fails_the_fold_and_money_conservation(
    bank_database_url: str, project_root: Path
):
    tamper(bank_database_url, "UPDATE accounts SET value = value + 1000 WHERE key = 'bob'")

    results = audit(bank_database_url, project_root)

    assert failed(results) == {FOLD_ACCOUNTS, MONEY_ACCOUNTS}
    (finding,) = results[FOLD_ACCOUNTS].findings
    assert "key='bob'" in finding
    assert "state_value=1080" in finding and "change_log_value=80" in finding
    (totals,) = results[MONEY_ACCOUNTS].findings
    assert "difference=1000" in totals


def test_a_deleted_account_row_fails_the_fold_and_money_conservation(
    bank_database_url: str, project_root: Path
):
    tamper(bank_database_url, "DELETE FROM accounts WHERE key = 'carol'")

    results = audit(bank_database_url, project_root)

    assert failed(results) == {FOLD_ACCOUNTS, MONEY_ACCOUNTS}
    (finding,) = results[FOLD_ACCOUNTS].findings
    assert "key='carol'" in finding and "row missing" in finding
    assert "difference=-50" in results[MONEY_ACCOUNTS].findings[0]


def test_a_deleted_change_log_entry_breaks_the_chain_at_the_next_one(
    bank_database_url: str, project_root: Path
):
    tamper(
        bank_database_url,
        "DELETE FROM ledger_change_log WHERE table_name = 'accounts' AND key = 'alice'"
        " AND (batch_id, position, seq) = (SELECT batch_id, position, seq FROM ledger_change_log"
        " WHERE table_name = 'accounts' AND key = 'alice' ORDER BY 1, 2, 3 LIMIT 1)",
    )

    results = audit(bank_database_url, project_root)

    assert CHAIN_ACCOUNTS in failed(results)
    (finding,) = results[CHAIN_ACCOUNTS].findings
    assert "key='alice'" in finding and "first change does not start from nothing" in finding


def test_a_row_without_change_log_entries_fails_the_fold(
    bank_database_url: str, project_root: Path
):
    tamper(bank_database_url, "INSERT INTO asset_ledger (key, value) VALUES ('platinum', 0)")

    results = audit(bank_database_url, project_root)

    assert failed(results) == {FOLD_ASSETS}
    (finding,) = results[FOLD_ASSETS].findings
    assert "key='platinum'" in finding and "without change-log entries" in finding


def test_the_schema_refuses_a_second_executed_event_with_a_taken_request_id(
    bank_database_url: str,
):
    with pytest.raises(IntegrityError, match="ledger_events_executed_request_id"):
        tamper(
            bank_database_url,
            "INSERT INTO ledger_events"
            " (batch_id, position, source_file, line_number, stream, request_id, outcome)"
            " SELECT 1, MAX(position) + 1, 'forged.jsonl', 1, 'deposits', 'd2', 'rejected'"
            " FROM ledger_events WHERE batch_id = 1",
        )


def test_a_second_applied_event_with_a_taken_request_id_fails_uniqueness(
    bank_database_url: str, project_root: Path
):
    # Someone with enough rights to drop the schema's guard goes around it; the audit still sees.
    tamper(bank_database_url, "DROP INDEX ledger_events_executed_request_id")
    tamper(
        bank_database_url,
        "INSERT INTO ledger_events"
        " (batch_id, position, source_file, line_number, stream, request_id, payload, outcome)"
        " SELECT 1, MAX(position) + 1, 'forged.jsonl', 1, 'balance_lookups', 'd2',"
        " '{\"account_id\": \"bob\"}', 'applied' FROM ledger_events WHERE batch_id = 1",
    )

    results = audit(bank_database_url, project_root)

    assert failed(results) == {UNIQUE_REQUESTS}
    (finding,) = results[UNIQUE_REQUESTS].findings
    assert "request_id='d2'" in finding and "executed_events=2" in finding


def test_a_rejected_event_counts_for_uniqueness_even_without_its_rejection_row(
    bank_database_url: str, project_root: Path
):
    tamper(bank_database_url, "DELETE FROM ledger_rejections WHERE request_id = 'd4'")
    tamper(bank_database_url, "DROP INDEX ledger_events_executed_request_id")
    tamper(
        bank_database_url,
        "INSERT INTO ledger_events"
        " (batch_id, position, source_file, line_number, stream, request_id, payload, outcome)"
        " SELECT 1, MAX(position) + 1, 'forged.jsonl', 1, 'deposits', 'd4', NULL, 'rejected'"
        " FROM ledger_events WHERE batch_id = 1",
    )

    results = audit(bank_database_url, project_root)

    assert failed(results) == {UNIQUE_REQUESTS}
    assert "request_id='d4'" in results[UNIQUE_REQUESTS].findings[0]


@pytest.mark.parametrize(
    ("table", "key", "check", "fold"),
    [
        ("accounts", "alice", NO_NEGATIVE_BALANCE, FOLD_ACCOUNTS),
        ("asset_ledger", "silver", NO_NEGATIVE_ASSET, FOLD_ASSETS),
    ],
)
def test_a_negative_value_fails_the_minimum(
    bank_database_url: str, project_root: Path, table: str, key: str, check: str, fold: str
):
    tamper(bank_database_url, f"UPDATE {table} SET value = -5 WHERE key = '{key}'")

    results = audit(bank_database_url, project_root)

    assert check in failed(results) and fold in failed(results)
    assert results[check].findings == (f"table_name='{table}', key='{key}', value=-5",)


def test_many_offending_rows_are_summed_up_in_ten_findings(
    bank_database_url: str, project_root: Path
):
    tamper(
        bank_database_url,
        "INSERT INTO accounts (key, value) SELECT 'ghost' || n, 0 FROM generate_series(1, 25) n",
    )

    results = audit(bank_database_url, project_root)

    assert failed(results) == {FOLD_ACCOUNTS}
    findings = results[FOLD_ACCOUNTS].findings
    assert len(findings) == 10
    assert findings[-1] == "... and 16 more"


def test_an_expectation_that_cannot_run_fails_with_the_error(
    bank_database_url: str, project_root: Path
):
    tamper(
        bank_database_url,
        "UPDATE ledger_events SET payload = jsonb_set(payload, ARRAY['amount'], '\"lots\"')"
        " WHERE request_id = 'd2'",
    )

    results = audit(bank_database_url, project_root)

    assert failed(results) == {MONEY_ACCOUNTS}
    (finding,) = results[MONEY_ACCOUNTS].findings
    assert finding.startswith("error: ") and "lots" in finding


def test_runs_on_different_databases_in_one_process_keep_them_apart(
    make_database_url: Callable[[], str],
    bank_workload: Callable[[Engine], None],
    project_root: Path,
):
    good, bad = make_database_url(), make_database_url()
    for url in (good, bad):
        engine = connect(url)
        try:
            bank_workload(engine)
        finally:
            engine.dispose()
    tamper(bad, "UPDATE accounts SET value = 1 WHERE key = 'dave'")
    plain_good = good.replace("postgresql+psycopg2://", "postgresql://", 1)

    for _ in range(2):
        assert failed(audit(bad, project_root)) == {FOLD_ACCOUNTS, MONEY_ACCOUNTS}
        assert failed(audit(plain_good, project_root)) == set()


def test_an_unreachable_database_raises_instead_of_failing_every_check(
    database_url: str, project_root: Path
):
    missing = make_url(database_url).set(database="ledger_test_no_such_database")

    with pytest.raises(OperationalError, match="ledger_test_no_such_database"):
        run_expectations(missing.render_as_string(hide_password=False), project_root)


def _committed_files(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file() and "uncommitted" not in path.relative_to(root).parts
    }


def test_the_committed_context_is_current_and_holds_no_credentials(
    database_url: str, tmp_path: Path
):
    """`expectations/gx` in the repository is what `run_expectations` would write: a run on a
    copy of it changes no file to commit (regenerate it by running the audit if this fails)."""
    committed = DEFAULT_PROJECT_ROOT / "gx"
    assert (committed / "great_expectations.yml").is_file()
    copy = tmp_path / "expectations"
    shutil.copytree(committed, copy / "gx", ignore=shutil.ignore_patterns("uncommitted"))
    before = _committed_files(copy)

    results = run_expectations(database_url, copy)

    assert results and all(r.passed for r in results)
    assert _committed_files(copy) == before
    config = (copy / "gx" / "great_expectations.yml").read_text(encoding="utf-8")
    assert "connection_string: ${LEDGER_GX_DATABASE_URL}" in config
    host = database_url.split("@", 1)[-1]
    for path in copy.rglob("*"):
        if path.is_file():
            assert host not in path.read_text(encoding="utf-8", errors="replace"), path


def test_a_changed_rule_rewrites_only_that_expectation(database_url: str, tmp_path: Path):
    """When the suite on disk differs from the code (an older version of a rule), the run brings
    it up to date, keeping the ids of the expectations that did not change; the next run finds
    it current."""
    root = tmp_path / "expectations"
    shutil.copytree(
        DEFAULT_PROJECT_ROOT / "gx", root / "gx", ignore=shutil.ignore_patterns("uncommitted")
    )
    suite_file = root / "gx" / "expectations" / "ledger_integrity.json"
    suite = json.loads(suite_file.read_text(encoding="utf-8"))
    suite["expectations"][2]["description"] = "an older wording of the rule"
    suite_file.write_text(json.dumps(suite, indent=2), encoding="utf-8")

    assert all(r.passed for r in run_expectations(database_url, root))

    updated = json.loads(suite_file.read_text(encoding="utf-8"))
    old_ids = [e["id"] for e in suite["expectations"]]
    new_ids = [e["id"] for e in updated["expectations"]]
    assert updated["id"] == suite["id"]
    assert new_ids[2] != old_ids[2]
    assert new_ids[:2] + new_ids[3:] == old_ids[:2] + old_ids[3:]
    before = _committed_files(root)
    run_expectations(database_url, root)
    assert _committed_files(root) == before
