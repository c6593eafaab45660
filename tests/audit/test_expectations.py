"""The Great Expectations audit on a real PostgreSQL: it passes on what the engine committed and
fails, naming the culprit, on each kind of change made behind the engine's back.

The bank workload (tests/support/bank_workload.py) plus a third batch with a self-transfer and
a fee transfer is committed once per module; each test works on a copy of that database."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from sqlalchemy import Engine, make_url, text
from sqlalchemy.exc import IntegrityError, OperationalError

from ledger_engine.audit.expectations.run import DEFAULT_PROJECT_ROOT, run_expectations
from ledger_engine.core.admission import INVALID_REQUEST_ID
from ledger_engine.pipeline.job import BatchSummary
from ledger_engine.store.database import connect
from tests.support.bank import fee_transfer, transfer
from tests.support.bank_workload import commit_bank_workload
from tests.support.events import event_file
from tests.support.expectations import (
    ACCOUNTED,
    BATCH_COUNTS,
    CHAIN_ACCOUNTS,
    CONTIGUOUS_BATCHES,
    FOLD_ACCOUNTS,
    FOLD_ASSETS,
    HASH_CHAIN,
    LEDGER,
    LINKS,
    MONEY_ACCOUNTS,
    NO_NEGATIVE_ASSET,
    NO_NEGATIVE_BALANCE,
    TRANSFERS_ACCOUNTS,
    TRANSFERS_ASSETS,
    UNIQUE_REQUESTS,
    audit,
    committed_files,
    failed,
    forge_executed_event,
    tamper,
)


def commit_transfers_batch(commit_files: Callable[..., BatchSummary], engine: Engine) -> None:
    """Batch 2, after the bank workload: a self-transfer (its two bindings share one row, so
    each table gets one change that nets to zero by itself) and a fee transfer (the fee goes to
    a third account). Final state: accounts alice 84, bob 80, carol 50, dave 10, fees 1;
    asset_ledger gold 8, silver 8, bronze 5, tin 2."""
    to_herself = transfer("s1", "alice", "alice", 10, assets=("gold", "gold"), asset_amount=1)
    paying_a_fee = fee_transfer(
        "f1", "alice", "dave", 5, assets=("gold", "tin"), asset_amount=1, fee=1, fee_account="fees"
    )
    batch2 = event_file([to_herself, paying_a_fee])
    commit_files(engine, 2, [("inbox/0003.jsonl", batch2)])


@pytest.fixture(scope="module")
def committed_ledger_url(module_database_url: str, commit_files) -> str:
    """The bank workload and the transfers batch, committed once; tests work on copies."""
    engine = connect(module_database_url)
    try:
        commit_bank_workload(commit_files, engine)
        commit_transfers_batch(commit_files, engine)
    finally:
        engine.dispose()
    return module_database_url


@pytest.fixture
def ledger_url(committed_ledger_url: str, make_database_url: Callable[..., str]) -> str:
    """A copy of the committed ledger, for this test alone."""
    return make_database_url(template=committed_ledger_url)


def test_every_expectation_passes_on_what_the_engine_committed(
    ledger_url: str, project_root: Path, capsys: pytest.CaptureFixture[str]
):
    engine = connect(ledger_url)
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
            transfer_changes = conn.execute(
                text(
                    "SELECT request_id, table_name, COUNT(*) FROM ledger_change_log"
                    " WHERE request_id IN ('t2', 's1', 'f1') GROUP BY 1, 2 ORDER BY 1, 2"
                )
            ).all()
            batches = conn.execute(text("SELECT COUNT(*) FROM ledger_batches")).scalar()
    finally:
        engine.dispose()
    # The workload has every kind of outcome the audit must not mistake for a fault.
    assert outcomes == {"applied": 10, "rejected": 5, "duplicate": 3}
    assert "REJECT" in statuses and "SUCCESS" in statuses
    # An applied transfer the bank app answered REJECT (t2) changed nothing; a self-transfer
    # (s1) changed one row per table; a fee transfer (f1) three accounts and two asset entries.
    assert transfer_changes == [
        ("f1", "accounts", 3),
        ("f1", "asset_ledger", 2),
        ("s1", "accounts", 1),
        ("s1", "asset_ledger", 1),
    ]
    assert batches == 3
    # Events with invalid request ids ('', 7) are stored with none, so they take none...
    assert reused_ids == []
    # ...and are rejected with the reason and detail the engine records for them.
    assert invalid_id_rejections == [("invalid_event", INVALID_REQUEST_ID)] * 3

    results = audit(ledger_url, project_root)

    assert failed(results) == set()
    assert all(r.findings == () for r in results.values())
    assert capsys.readouterr().out == ""  # Great Expectations' console noise is kept down


def test_data_docs_index_exists_after_a_run(ledger_url: str, project_root: Path):
    results = audit(ledger_url, project_root)

    links = {r.link for r in results.values()}
    assert len(links) == 1
    link = links.pop()
    assert link is not None and link.startswith("file://")
    index = Path(unquote(urlparse(link).path))
    assert index == project_root / "gx" / "uncommitted" / "data_docs" / "local_site" / "index.html"
    assert index.is_file()
    assert "ledger_integrity" in index.read_text(encoding="utf-8")


def test_a_balance_changed_behind_the_engine_fails_the_fold_and_money_conservation(
    ledger_url: str, project_root: Path
):
    tamper(ledger_url, "UPDATE accounts SET value = value + 1000 WHERE key = 'bob'")

    results = audit(ledger_url, project_root)

    assert failed(results) == {FOLD_ACCOUNTS, MONEY_ACCOUNTS}
    (finding,) = results[FOLD_ACCOUNTS].findings
    assert "key='bob'" in finding
    assert "state_value=1080" in finding and "change_log_value=80" in finding
    (totals,) = results[MONEY_ACCOUNTS].findings
    assert "difference='10.00 EUR'" in totals  # in the accounts' unit, EUR/2


def test_a_deleted_account_row_fails_the_fold_and_money_conservation(
    ledger_url: str, project_root: Path
):
    tamper(ledger_url, "DELETE FROM accounts WHERE key = 'carol'")

    results = audit(ledger_url, project_root)

    assert failed(results) == {FOLD_ACCOUNTS, MONEY_ACCOUNTS}
    (finding,) = results[FOLD_ACCOUNTS].findings
    assert "key='carol'" in finding and "row missing" in finding
    assert "difference='-0.50 EUR'" in results[MONEY_ACCOUNTS].findings[0]


def test_a_deleted_change_log_entry_breaks_the_chain_at_the_next_one(
    ledger_url: str, project_root: Path
):
    tamper(
        ledger_url,
        "DELETE FROM ledger_change_log WHERE table_name = 'accounts' AND key = 'alice'"
        " AND (batch_id, position, seq) = (SELECT batch_id, position, seq FROM ledger_change_log"
        " WHERE table_name = 'accounts' AND key = 'alice' ORDER BY 1, 2, 3 LIMIT 1)",
    )

    results = audit(ledger_url, project_root)

    assert CHAIN_ACCOUNTS in failed(results)
    (finding,) = results[CHAIN_ACCOUNTS].findings
    assert "key='alice'" in finding and "first change does not start from nothing" in finding


def test_a_row_without_change_log_entries_fails_the_fold(ledger_url: str, project_root: Path):
    tamper(ledger_url, "INSERT INTO asset_ledger (key, value) VALUES ('platinum', 0)")

    results = audit(ledger_url, project_root)

    assert failed(results) == {FOLD_ASSETS}
    (finding,) = results[FOLD_ASSETS].findings
    assert "key='platinum'" in finding and "without change-log entries" in finding


def test_a_row_naming_another_change_as_its_last_fails_the_fold(
    ledger_url: str, project_root: Path
):
    tamper(
        ledger_url, "UPDATE accounts SET last_change_seq = last_change_seq + 1 WHERE key = 'bob'"
    )

    results = audit(ledger_url, project_root)

    assert failed(results) == {FOLD_ACCOUNTS}
    (finding,) = results[FOLD_ACCOUNTS].findings
    assert "key='bob'" in finding and "row names another change as its last" in finding


# A key's first change in a batch after its first batch: a change that its commit linked.
_LINKED = (
    "SELECT batch_id, position, seq FROM ledger_change_links ORDER BY batch_id, position, seq"
    " LIMIT 1"
)


@pytest.mark.parametrize(
    ("statement", "problem"),
    [
        (
            f"DELETE FROM ledger_change_links WHERE (batch_id, position, seq) = ({_LINKED})",
            "link missing",
        ),
        (
            "UPDATE ledger_change_links SET prev_seq = prev_seq + 1"
            f" WHERE (batch_id, position, seq) = ({_LINKED})",
            "link names another change",
        ),
        (
            "INSERT INTO ledger_change_links SELECT batch_id, position, seq, 0, 0, 0"
            " FROM ledger_change_log WHERE batch_id = 2 AND NOT EXISTS (SELECT FROM"
            " ledger_change_links AS k WHERE (k.batch_id, k.position, k.seq) ="
            " (ledger_change_log.batch_id, ledger_change_log.position, ledger_change_log.seq))"
            " ORDER BY position DESC, seq DESC LIMIT 1",
            "link where none belongs",
        ),
    ],
    ids=["deleted", "altered", "forged"],
)
def test_a_change_link_other_than_the_chain_implies_is_named(
    ledger_url: str, project_root: Path, statement: str, problem: str
):
    tamper(ledger_url, statement)

    results = audit(ledger_url, project_root)

    assert failed(results) == {LINKS}
    (finding,) = results[LINKS].findings
    assert problem in finding and "key=" in finding


def test_the_schema_refuses_a_second_executed_event_with_a_taken_request_id(
    ledger_url: str,
):
    with pytest.raises(IntegrityError, match="ledger_events_executed_request_id"):
        tamper(
            ledger_url,
            "INSERT INTO ledger_events"
            " (batch_id, position, source_file, line_number, stream, request_id, outcome)"
            " SELECT 1, MAX(position) + 1, 'forged.jsonl', 1, 'deposits', 'd2', 'rejected'"
            " FROM ledger_events WHERE batch_id = 1",
        )


def test_a_second_applied_event_with_a_taken_request_id_fails_uniqueness(
    ledger_url: str, project_root: Path
):
    # Someone going around the schema's guard; the audit still sees.
    forge_executed_event(ledger_url, "d2", "balance_lookups", '{"account_id": "bob"}', "applied")

    results = audit(ledger_url, project_root)

    # The forged event is also unaccounted for (d2's executed request id is the first event's)
    # and not counted in its batch's row.
    assert failed(results) == {UNIQUE_REQUESTS, ACCOUNTED, BATCH_COUNTS}
    (finding,) = results[UNIQUE_REQUESTS].findings
    assert "request_id='d2'" in finding and "executed_events=2" in finding
    assert results[ACCOUNTED].findings == (
        "batch_id=1, position=5, outcome='applied', request_id='d2',"
        " problem='its executed request id points to batch 0, position 1'",
    )


def test_a_rejected_event_counts_for_uniqueness_even_without_its_rejection_row(
    ledger_url: str, project_root: Path
):
    tamper(ledger_url, "DELETE FROM ledger_rejections WHERE request_id = 'd4'")
    forge_executed_event(ledger_url, "d4", "deposits", None, "rejected")

    results = audit(ledger_url, project_root)

    assert failed(results) == {UNIQUE_REQUESTS, ACCOUNTED, BATCH_COUNTS}
    assert "request_id='d4'" in results[UNIQUE_REQUESTS].findings[0]


@pytest.mark.parametrize(
    ("table", "key", "check", "fold", "value", "minimum"),
    [
        # The value and the minimum read in the table's unit: EUR/2, units/0.
        ("accounts", "alice", NO_NEGATIVE_BALANCE, FOLD_ACCOUNTS, "'-0.05 EUR'", "'0.00 EUR'"),
        ("asset_ledger", "silver", NO_NEGATIVE_ASSET, FOLD_ASSETS, "'-5 units'", "'0 units'"),
    ],
)
def test_a_negative_value_fails_the_minimum(
    ledger_url: str,
    project_root: Path,
    table: str,
    key: str,
    check: str,
    fold: str,
    value: str,
    minimum: str,
):
    tamper(ledger_url, f"UPDATE {table} SET value = -5 WHERE key = '{key}'")

    results = audit(ledger_url, project_root)

    assert check in failed(results) and fold in failed(results)
    assert results[check].findings == (f"key='{key}', value={value}, minimum={minimum}",)


@pytest.mark.parametrize(
    ("table", "request_id", "key", "after", "check", "also_failing", "finding"),
    [
        (
            "accounts",
            "t1",
            "alice",
            71,  # alice paid 29 of the 30 bob got
            TRANSFERS_ACCOUNTS,
            CHAIN_ACCOUNTS,  # alice's next change starts from 70
            "request_id='t1', batch_id=0, position=3, stream='transfers', changes=2,"
            " net_change='0.01 EUR'",
        ),
        (
            "asset_ledger",
            "f1",
            "tin",
            3,  # tin got 2 of the 1 gold gave
            TRANSFERS_ASSETS,
            FOLD_ASSETS,  # tin's last change no longer says what the table holds
            "request_id='f1', batch_id=2, position=1, stream='fee_transfers', changes=2,"
            " net_change='1 units'",
        ),
    ],
)
def test_an_unbalanced_transfer_change_is_named_by_its_request(
    ledger_url: str,
    project_root: Path,
    table: str,
    request_id: str,
    key: str,
    after: int,
    check: str,
    also_failing: str,
    finding: str,
):
    tamper(
        ledger_url,
        f"UPDATE ledger_change_log SET after = '{after}' WHERE request_id = '{request_id}'"
        f" AND table_name = '{table}' AND key = '{key}'",
    )

    results = audit(ledger_url, project_root)

    assert failed(results) == {check, also_failing}
    assert results[check].findings == (finding,)


def test_a_deleted_change_of_a_transfer_unbalances_it_and_its_batch_count(
    ledger_url: str, project_root: Path
):
    tamper(
        ledger_url,
        "DELETE FROM ledger_change_log WHERE request_id = 't1' AND table_name = 'accounts'"
        " AND key = 'bob'",
    )

    results = audit(ledger_url, project_root)

    assert failed(results) == {TRANSFERS_ACCOUNTS, BATCH_COUNTS, FOLD_ACCOUNTS}
    assert results[TRANSFERS_ACCOUNTS].findings == (
        "request_id='t1', batch_id=0, position=3, stream='transfers', changes=1,"
        " net_change='-0.30 EUR'",
    )
    assert results[BATCH_COUNTS].findings == ("batch_id=0, field='changes', recorded=10, found=9",)


def test_a_forged_result_of_a_rejected_event_is_named_by_batch_and_position(
    ledger_url: str, project_root: Path
):
    tamper(
        ledger_url,
        "INSERT INTO ledger_results (batch_id, position, seq, stream, request_id, payload)"
        " VALUES (0, 6, 0, 'deposits', 'd4', '{\"status\": \"SUCCESS\"}')",
    )

    results = audit(ledger_url, project_root)

    assert failed(results) == {ACCOUNTED, BATCH_COUNTS}
    assert results[ACCOUNTED].findings == (
        "batch_id=0, position=6, outcome='rejected', request_id='d4',"
        " problem='results of an event that was rejected'",
    )
    assert results[BATCH_COUNTS].findings == ("batch_id=0, field='results', recorded=2, found=3",)


def test_events_missing_their_rows_or_their_place_are_named_by_batch_and_position(
    ledger_url: str, project_root: Path
):
    tamper(
        ledger_url,
        "DELETE FROM ledger_rejections WHERE request_id = 'd4'",
        "DELETE FROM ledger_duplicates WHERE (batch_id, position) = (1, 0)",
        # t2: applied (the bank app answered REJECT), with a result and its executed request id.
        "DELETE FROM ledger_events WHERE request_id = 't2'",
    )

    results = audit(ledger_url, project_root)

    assert failed(results) == {ACCOUNTED, BATCH_COUNTS}
    assert results[ACCOUNTED].findings == (
        "batch_id=0, position=4, outcome=None, request_id=None,"
        " problem='executed request id without an executed event of that id;"
        " no event at this position; results without their event'",
        "batch_id=0, position=6, outcome='rejected', request_id='d4',"
        " problem='rejected event without its rejection'",
        "batch_id=1, position=0, outcome='duplicate', request_id='t1',"
        " problem='duplicate event without its duplicate row'",
    )
    assert results[BATCH_COUNTS].findings == (
        "batch_id=0, field='applied', recorded=5, found=4",
        "batch_id=0, field='events_ingested', recorded=11, found=10",
    )


def test_altered_batch_counts_are_named_by_batch_and_field(ledger_url: str, project_root: Path):
    tamper(
        ledger_url,
        "UPDATE ledger_batches SET changes = changes + 1 WHERE batch_id = 1",
        # Still adds up to events_ingested, as the table's CHECK demands.
        "UPDATE ledger_batches SET applied = applied - 1, rejected = rejected + 1"
        " WHERE batch_id = 0",
    )

    results = audit(ledger_url, project_root)

    # The rows' hashes no longer match their fields either; recomputing them is `ledger verify`'s.
    assert failed(results) == {BATCH_COUNTS}
    assert results[BATCH_COUNTS].findings == (
        "batch_id=0, field='applied', recorded=4, found=5",
        "batch_id=0, field='rejected', recorded=6, found=5",
        "batch_id=1, field='changes', recorded=7, found=6",
    )


def test_swapped_batch_hashes_break_the_chain_at_the_batches_after_them(
    ledger_url: str, project_root: Path
):
    tamper(
        ledger_url,
        # batch_hash is unique: move both aside first, then swap.
        "UPDATE ledger_batches SET batch_hash = 'x' || batch_hash WHERE batch_id IN (0, 1)",
        "UPDATE ledger_batches AS b SET batch_hash = substr(o.batch_hash, 2)"
        " FROM ledger_batches AS o WHERE (b.batch_id, o.batch_id) IN ((0, 1), (1, 0))",
    )

    results = audit(ledger_url, project_root)

    assert failed(results) == {HASH_CHAIN}
    findings = results[HASH_CHAIN].findings
    assert [f.split(",")[0] for f in findings] == ["batch_id=1", "batch_id=2"]
    assert all(
        f.endswith("problem='prev_hash is not the batch_hash of the batch before'")
        for f in findings
    )


def test_a_chain_that_does_not_start_from_the_genesis_hash_is_named_at_batch_0(
    ledger_url: str, project_root: Path
):
    tamper(ledger_url, "UPDATE ledger_batches SET prev_hash = repeat('f', 64) WHERE batch_id = 0")

    results = audit(ledger_url, project_root)

    assert failed(results) == {HASH_CHAIN}
    assert results[HASH_CHAIN].findings == (
        "batch_id=0, prev_hash='ffffffffffffffff', hash_of_batch_before='0000000000000000',"
        " problem='the first batch does not start from the genesis hash'",
    )


def test_a_deleted_batch_row_leaves_a_gap_and_rows_without_their_batch(
    ledger_url: str, project_root: Path
):
    tamper(ledger_url, "DELETE FROM ledger_batches WHERE batch_id = 1")

    results = audit(ledger_url, project_root)

    assert failed(results) == {CONTIGUOUS_BATCHES, HASH_CHAIN}
    orphan = "problem='rows of a batch that has no batch row'"
    assert results[CONTIGUOUS_BATCHES].findings == (
        "batch_id=1, table_name='ledger_batches', problem='no batch row for this batch id'",
        f"batch_id=1, table_name='ledger_change_log', {orphan}",
        f"batch_id=1, table_name='ledger_duplicates', {orphan}",
        f"batch_id=1, table_name='ledger_events', {orphan}",
        f"batch_id=1, table_name='ledger_results', {orphan}",
    )
    (link,) = results[HASH_CHAIN].findings
    assert link.startswith("batch_id=2,") and "hash_of_batch_before=None" in link
    assert link.endswith("problem='the batch before is missing'")


def test_many_offending_rows_are_summed_up_in_ten_findings(ledger_url: str, project_root: Path):
    tamper(
        ledger_url,
        "INSERT INTO accounts (key, value) SELECT 'ghost' || n, 0 FROM generate_series(1, 25) n",
    )

    results = audit(ledger_url, project_root)

    assert failed(results) == {FOLD_ACCOUNTS}
    findings = results[FOLD_ACCOUNTS].findings
    assert len(findings) == 10
    assert findings[-1] == "... and 16 more"


def test_an_expectation_that_cannot_run_fails_with_the_error(ledger_url: str, project_root: Path):
    tamper(
        ledger_url,
        "UPDATE ledger_events SET payload = jsonb_set(payload, ARRAY['amount'], '\"lots\"')"
        " WHERE request_id = 'd2'",
    )

    results = audit(ledger_url, project_root)

    assert failed(results) == {MONEY_ACCOUNTS}
    (finding,) = results[MONEY_ACCOUNTS].findings
    assert finding.startswith("error: ") and "lots" in finding


def test_runs_on_different_databases_in_one_process_keep_them_apart(
    committed_ledger_url: str, make_database_url: Callable[..., str], project_root: Path
):
    good, bad = (make_database_url(template=committed_ledger_url) for _ in range(2))
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
        run_expectations(missing.render_as_string(hide_password=False), LEDGER, project_root)


def test_the_committed_context_is_current_and_holds_no_credentials(
    database_url: str, tmp_path: Path
):
    """`expectations/gx` in the repository is what `run_expectations` would write: a run on a
    copy of it changes no file to commit (regenerate it by running the audit if this fails)."""
    committed = DEFAULT_PROJECT_ROOT / "gx"
    assert (committed / "great_expectations.yml").is_file()
    copy = tmp_path / "expectations"
    shutil.copytree(committed, copy / "gx", ignore=shutil.ignore_patterns("uncommitted"))
    before = committed_files(copy)

    results = run_expectations(database_url, LEDGER, copy)

    assert results and all(r.passed for r in results)
    assert committed_files(copy) == before
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

    assert all(r.passed for r in run_expectations(database_url, LEDGER, root))

    updated = json.loads(suite_file.read_text(encoding="utf-8"))
    old_ids = [e["id"] for e in suite["expectations"]]
    new_ids = [e["id"] for e in updated["expectations"]]
    assert updated["id"] == suite["id"]
    assert new_ids[2] != old_ids[2]
    assert new_ids[:2] + new_ids[3:] == old_ids[:2] + old_ids[3:]
    before = committed_files(root)
    run_expectations(database_url, LEDGER, root)
    assert committed_files(root) == before
