"""The batch audit: after every pipeline run it covers the batches committed since the last
passing audit, leaves a mark when every check passed, and finds and locates what was changed
behind the engine's back in those batches. What changed in batches an earlier audit proved is
the full audit's to find: both halves of that contract are asserted here.

The module's ledger is the bank workload (tests/support/bank_workload.py) committed the way the
pipeline commits it (`audited_ledger_url`, tests/audit/conftest.py): batch 0, a passing batch
audit (its mark: through batch 0), batch 1. So the next batch audit's scope is batch 1 (which
writes alice, carol and dave; gold, bronze and tin), and batch 0 (bob and silver were last
written there) lies before it. Each test works on a copy of that database.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from ledger_engine.audit.findings import BATCHES, FULL, AuditReport, AuditScope
from ledger_engine.cli import main
from ledger_engine.store.database import connect
from ledger_engine.tasks.audit_runs import run_audits
from tests.support.bank import deposit, transfer
from tests.support.bank_workload import audit_settings
from tests.support.events import event_file
from tests.support.html_page import read_page

# --- The ledger and its audits -------------------------------------------------------------


# The module's Great Expectations project (`project_root`) and each test's copy of the audited
# ledger (`ledger_url`) are tests/audit/conftest.py's, as for the batch suite's tests.
@pytest.fixture
def engine_of(ledger_url: str) -> Iterator[Engine]:
    engine = connect(ledger_url)
    yield engine
    engine.dispose()


@pytest.fixture
def audit(
    ledger_url: str, engine_of: Engine, project_root: Path, tmp_path: Path
) -> Callable[..., AuditReport]:
    """`audit(full=False)`: the batch audit (the full audit) of the test's ledger, as `ledger
    audit` runs it; its page is written under the test's tmp_path."""

    def run(full: bool = False) -> AuditReport:
        report, page = run_audits(
            audit_settings(ledger_url, tmp_path),
            engine=engine_of,
            expectations_root=project_root,
            full=full,
        )
        assert page.is_file()
        return report

    return run


def tamper(engine: Engine, *statements: str) -> None:
    """Run `statements` in one transaction, as someone going around the engine would."""
    with engine.begin() as conn:
        for statement in statements:
            conn.execute(text(statement))


def marks(engine: Engine) -> list[tuple]:
    """(kind, first batch, audited through) of every mark, oldest first."""
    with engine.connect() as conn:
        return [
            tuple(row)
            for row in conn.execute(
                text(
                    "SELECT kind, first_batch, audited_through FROM ledger_audit_marks"
                    " ORDER BY mark_id"
                )
            )
        ]


def failures(report: AuditReport) -> dict[str, tuple[str, ...]]:
    """The findings of each failed check by name (the batch counts are checked by both suites,
    under one name: their findings together)."""
    found: dict[str, tuple[str, ...]] = {}
    for check in report.checks:
        if not check.passed:
            found[check.name] = found.get(check.name, ()) + check.findings
    return found


def found(report: AuditReport, check: str, *parts: str) -> bool:
    """Whether a finding of `check` names every one of `parts`."""
    return any(all(p in f for p in parts) for f in failures(report).get(check, ()))


# --- Scope and marks -----------------------------------------------------------------------


def test_the_batch_audit_covers_the_batches_since_the_last_mark_and_leaves_its_own(
    audit, engine_of: Engine
) -> None:
    assert marks(engine_of) == [(BATCHES, 0, 0)], "the module's audit of batch 0"

    report = audit()

    assert failures(report) == {}
    assert report.scope == AuditScope(BATCHES, 1, 1, batch_hash(engine_of, 1))
    suites = {c.suite for c in report.checks}
    assert suites == {"merkle", "great_expectations"}
    assert marks(engine_of) == [(BATCHES, 0, 0), (BATCHES, 1, 1)]
    # Where its time went, part by part, for the benchmark's profile.
    assert set(report.seconds) == {
        "merkle part",
        "expectations part",
        "mark and report",
    }
    assert all(seconds > 0 for seconds in report.seconds.values())


def test_each_audit_covers_only_the_batches_committed_since_the_one_before(
    audit, engine_of: Engine, commit_files
) -> None:
    audit()
    erin_deposit = deposit("d9", "erin", 9, asset="lead", asset_amount=3)
    erin_transfer = transfer("t9", "erin", "bob", 4, assets=("lead", "silver"), asset_amount=1)
    commit_files(engine_of, 2, [("inbox/0003.jsonl", event_file([erin_deposit]))])
    commit_files(engine_of, 3, [("inbox/0004.jsonl", event_file([erin_transfer]))])

    covering_two = audit()
    with_nothing_new = audit()

    assert covering_two.passed and with_nothing_new.passed
    assert (covering_two.scope.first_batch, covering_two.scope.last_batch) == (2, 3)
    assert (with_nothing_new.scope.first_batch, with_nothing_new.scope.last_batch) == (4, 3)
    assert with_nothing_new.scope.empty
    assert marks(engine_of)[-3:] == [(BATCHES, 1, 1), (BATCHES, 2, 3), (BATCHES, 4, 3)]


def test_a_failing_audit_leaves_no_mark_and_the_next_one_reports_the_same_finding(
    audit, engine_of: Engine
) -> None:
    tamper(engine_of, "UPDATE accounts SET value = value + 1000 WHERE key = 'dave'")

    first, second = audit(), audit()

    check = "accounts keys written in scope hold their last change"
    assert failures(first) == failures(second)
    assert found(second, check, "key='dave'", "state_value=1005", "change_log_value=5")
    assert second.scope.first_batch == 1, "the scope stays where the last passing audit left it"
    assert marks(engine_of) == [(BATCHES, 0, 0)]


def test_a_passing_full_audit_leaves_a_mark_the_batch_audit_starts_after(
    audit, engine_of: Engine
) -> None:
    full = audit(full=True)
    after = audit()

    assert full.passed, failures(full)
    assert full.scope == AuditScope(FULL, 0, 1, batch_hash(engine_of, 1))
    assert {c.name for c in full.checks} >= {"merkle root of accounts", "batch hash chain"}
    assert marks(engine_of)[-2:] == [(FULL, 0, 1), (BATCHES, 2, 1)]
    assert after.passed and after.scope.empty


def batch_hash(engine: Engine, batch_id: int) -> str:
    with engine.connect() as conn:
        return conn.execute(
            text("SELECT batch_hash FROM ledger_batches WHERE batch_id = :b"), {"b": batch_id}
        ).scalar_one()


# --- Tampering inside the scope: found and located -----------------------------------------

# dave's opening deposit (request id '7') is the last event of batch 1.
_DAVE_DEPOSIT = "SELECT batch_id, position FROM ledger_events WHERE request_id = '7'"
_FORGED_RESULT = (
    "INSERT INTO ledger_results (batch_id, position, seq, stream, request_id, payload)"
    f" SELECT batch_id, position, 1, 'deposit_results', '7', '{{}}' FROM ({_DAVE_DEPOSIT}) AS d"
)
_FIRST_BUCKET = "SELECT min(bucket) FROM ledger_merkle_buckets WHERE table_name = 'accounts'"

IN_SCOPE = {
    "a balance written in scope changed": (
        ["UPDATE accounts SET value = 1 WHERE key = 'dave'"],
        {
            "accounts keys written in scope hold their last change": (
                "key='dave'",
                "state_value=1",
                "change_log_value=5",
            ),
        },
    ),
    "a change-log row of the scope deleted": (
        [
            "DELETE FROM ledger_change_log WHERE table_name = 'accounts' AND key = 'dave'"
            " AND batch_id = 1"
        ],
        {
            "batch counts in scope equal the rows they describe": (
                "batch 1: changes recorded 6, found 5",
            ),
            "accounts total equals applied deposits and adjustments, in scope": (
                "batch_id=1",
                "difference='-0.05 EUR'",
            ),
            "merkle digests of accounts follow the change log": (
                "batches 1 to 1 do not hash to the root recorded in batch 0",
            ),
        },
    ),
    "a batch row's count in scope altered": (
        ["UPDATE ledger_batches SET results = results + 1 WHERE batch_id = 1"],
        {
            "batch hash chain over the scope": (
                "first broken link: batch 1: its fields do not hash to its recorded batch_hash",
            ),
            "batch counts in scope equal the rows they describe": (
                "batch_id=1, field='results', recorded=3, found=2",
            ),
        },
    ),
    "a result forged in scope": (
        [_FORGED_RESULT],
        {
            "batch counts in scope equal the rows they describe": (
                "batch 1: results recorded 2, found 3",
            ),
        },
    ),
    "a stored bucket digest edited": (
        [
            "UPDATE ledger_merkle_buckets SET digest = repeat('0', 64)"
            f" WHERE table_name = 'accounts' AND bucket = ({_FIRST_BUCKET})"
        ],
        {
            "merkle digests of accounts follow the change log": (
                "the stored bucket digests (ledger_merkle_buckets) do not hash to the root"
                " recorded in batch 1",
            ),
        },
    ),
}


@pytest.mark.parametrize("case", list(IN_SCOPE), ids=list(IN_SCOPE))
def test_a_change_inside_the_scope_is_found_and_located(
    audit, engine_of: Engine, case: str
) -> None:
    statements, expected = IN_SCOPE[case]
    tamper(engine_of, *statements)

    report = audit()

    assert report.scope.first_batch == 1 and not report.passed
    for check, parts in expected.items():
        assert found(report, check, *parts), (check, failures(report))
    assert marks(engine_of) == [(BATCHES, 0, 0)], "a failing audit leaves no mark"


def test_the_batch_before_the_scope_must_keep_the_hash_its_audit_proved(
    audit, engine_of: Engine
) -> None:
    tamper(engine_of, "UPDATE ledger_batches SET changes = changes - 1 WHERE batch_id = 0")

    report = audit()

    assert failures(report)["batch hash chain over the scope"] == (
        "first broken link: batch 0: its fields do not hash to its recorded batch_hash",
    )


# --- A key's change before the scope: where its commit's link says ------------------------

CHAIN = "accounts change log in scope continues its chain"
FOLD = "accounts keys written in scope hold their last change"
# bob's last change of batch 0 (where t1 paid him 30: he has 80 since).
_BOBS_CHANGE = (
    "SELECT batch_id, position, seq FROM ledger_change_log"
    " WHERE table_name = 'accounts' AND key = 'bob' AND batch_id = 0"
    " ORDER BY position DESC, seq DESC LIMIT 1"
)
_BOB_MADE_81 = (
    f"UPDATE ledger_change_log SET after = '81' WHERE (batch_id, position, seq) = ({_BOBS_CHANGE})"
)
# bob's first change of batch 2 (the deposit of `bob_written_again`).
_BOBS_DEPOSIT = (
    "SELECT batch_id, position, seq FROM ledger_change_log"
    " WHERE table_name = 'accounts' AND key = 'bob' AND batch_id = 2"
)


def links(engine: Engine, batch_id: int) -> dict[tuple[str, str], tuple[int, int, int]]:
    """(table, key) of each change batch `batch_id` links, to the change it links to."""
    with engine.connect() as conn:
        return {
            (row.table_name, row.key): (row.prev_batch, row.prev_position, row.prev_seq)
            for row in conn.execute(
                text(
                    "SELECT c.table_name, c.key, k.prev_batch, k.prev_position, k.prev_seq"
                    " FROM ledger_change_links AS k JOIN ledger_change_log AS c"
                    " USING (batch_id, position, seq) WHERE k.batch_id = :b"
                ),
                {"b": batch_id},
            )
        }


@pytest.fixture
def bob_written_again(audit, engine_of: Engine, commit_files) -> None:
    """Batch 1 audited, then batch 2, a deposit to bob: his change before the scope is batch
    0's, which his row names and batch 2's commit links his deposit to."""
    assert audit().passed
    bob_deposit = deposit("d9", "bob", 5, asset="silver", asset_amount=1)
    commit_files(engine_of, 2, [("inbox/0003.jsonl", event_file([bob_deposit]))])


@pytest.mark.usefixtures("bob_written_again")
def test_the_commit_links_each_key_s_first_change_to_the_change_its_row_named(
    engine_of: Engine,
) -> None:
    with engine_of.connect() as conn:
        bobs_change = tuple(conn.execute(text(_BOBS_CHANGE)).one())
        silver = tuple(
            conn.execute(
                text(
                    "SELECT batch_id, position, seq FROM ledger_change_log"
                    " WHERE table_name = 'asset_ledger' AND key = 'silver' AND batch_id < 2"
                    " ORDER BY batch_id DESC, position DESC, seq DESC LIMIT 1"
                )
            ).one()
        )
        bobs_row = conn.execute(
            text(
                "SELECT last_change_batch, last_change_position, last_change_seq"
                " FROM accounts WHERE key = 'bob'"
            )
        ).one()
        deposit_at = tuple(conn.execute(text(_BOBS_DEPOSIT)).one())

    assert links(engine_of, 2) == {
        ("accounts", "bob"): bobs_change,
        ("asset_ledger", "silver"): silver,
    }
    assert tuple(bobs_row) == deposit_at, "the row now names its change of batch 2"


@pytest.mark.usefixtures("bob_written_again")
def test_a_change_before_the_scope_is_read_where_the_link_points(audit, engine_of: Engine) -> None:
    tamper(engine_of, _BOB_MADE_81)

    report = audit()

    assert report.scope.first_batch == 2
    assert set(failures(report)) == {CHAIN}
    assert found(report, CHAIN, "key='bob'", "before=80", "previous_after=81")


@pytest.mark.usefixtures("bob_written_again")
def test_a_link_to_a_change_gone_from_the_change_log_is_a_finding(audit, engine_of: Engine) -> None:
    with engine_of.connect() as conn:
        batch_id, position, seq = conn.execute(text(_BOBS_CHANGE)).one()
    tamper(
        engine_of,
        f"DELETE FROM ledger_change_log WHERE (batch_id, position, seq) = ({_BOBS_CHANGE})",
    )

    report = audit()

    assert set(failures(report)) == {CHAIN}
    assert found(
        report,
        CHAIN,
        "key='bob'",
        f"its change before the scope (batch {batch_id}, position {position}, seq {seq})"
        " is missing from the change log",
    )


@pytest.mark.usefixtures("bob_written_again")
def test_a_link_to_another_key_s_change_is_a_finding(audit, engine_of: Engine) -> None:
    alices = (
        "SELECT batch_id, position, seq FROM ledger_change_log"
        " WHERE table_name = 'accounts' AND key = 'alice' AND batch_id = 0 LIMIT 1"
    )
    tamper(
        engine_of,
        "UPDATE ledger_change_links SET (prev_batch, prev_position, prev_seq) ="
        f" ({alices}) WHERE (batch_id, position, seq) = ({_BOBS_DEPOSIT})",
    )

    report = audit()

    assert set(failures(report)) == {CHAIN}
    assert found(report, CHAIN, "key='bob'", "is missing from the change log")


@pytest.mark.usefixtures("bob_written_again")
def test_a_link_removed_leaves_a_change_that_does_not_start_from_nothing(
    audit, engine_of: Engine
) -> None:
    tamper(
        engine_of,
        f"DELETE FROM ledger_change_links WHERE (batch_id, position, seq) = ({_BOBS_DEPOSIT})",
    )

    report = audit()

    assert set(failures(report)) == {CHAIN}
    assert found(report, CHAIN, "key='bob'", "first change does not start from nothing")


@pytest.mark.usefixtures("bob_written_again")
def test_a_row_naming_another_change_as_its_last_is_a_finding(audit, engine_of: Engine) -> None:
    """What a row names is what the next commit links the key's change to: a row that names
    another change is found where the batch that wrote it is in scope."""
    tamper(engine_of, "UPDATE accounts SET last_change_seq = last_change_seq + 7 WHERE key = 'bob'")

    report = audit()

    assert set(failures(report)) == {FOLD}
    assert found(report, FOLD, "key='bob'", "row names another change as its last")


def test_a_failing_audit_leaves_no_mark(audit, engine_of: Engine) -> None:
    """dave's row changed behind the engine: the Merkle part passes (the change log and the
    trees agree) and the Great Expectations part fails: no mark."""
    tamper(engine_of, "UPDATE accounts SET value = value + 1000 WHERE key = 'dave'")

    report = audit()

    assert all(c.passed for c in report.checks if c.suite == "merkle")
    assert set(failures(report)) == {FOLD}
    assert marks(engine_of) == [(BATCHES, 0, 0)]


# --- Outside the scope: the full audit's to find ------------------------------------------


def test_an_already_audited_row_changed_is_missed_by_the_batch_audit_and_found_by_the_full(
    audit, engine_of: Engine
) -> None:
    """The contract: the batch audit proves what was committed since the last audit, and
    takes the rest from the hash chain and the Merkle roots, which a change to a table row
    does not touch. Recomputing the trees from every row is the full audit's work."""
    tamper(engine_of, "UPDATE accounts SET value = value + 1000 WHERE key = 'bob'")

    batch_audit = audit()
    full_audit = audit(full=True)

    assert batch_audit.passed, "bob was last written in batch 0, before the scope"
    assert not full_audit.passed
    assert found(full_audit, "merkle root of accounts", 'key "bob": recorded 80, found 1080')
    assert found(full_audit, "accounts equals the fold of its change log", "key='bob'")
    assert [m[0] for m in marks(engine_of)] == [BATCHES, BATCHES], "the full audit left none"


def test_ledger_audit_passes_and_ledger_audit_full_fails_on_an_audited_row_changed(
    ledger_url: str, engine_of: Engine, tmp_path: Path, monkeypatch, capsys
) -> None:
    tamper(engine_of, "UPDATE asset_ledger SET value = 0 WHERE key = 'silver'")
    monkeypatch.setenv("LEDGER_DATABASE_URL", ledger_url)
    monkeypatch.setenv("LEDGER_DATA_DIR", str(tmp_path))

    assert main(["audit"]) == 0
    batch_output = capsys.readouterr().out
    assert main(["audit", "--full"]) == 1
    full_output = capsys.readouterr().out

    assert "Batch audit: batches 1 to 1" in batch_output and "FAILED" not in batch_output
    assert "Full audit: every batch, 0 to 1" in full_output
    assert "FAILED" in full_output
    full_page = sorted(tmp_path.glob("reports/audit-*.html"))[-1].read_text(encoding="utf-8")
    assert 'key "silver": recorded 8, found 0' in html.unescape(full_page)


# --- The report says which audit it was ----------------------------------------------------


def test_the_report_names_the_kind_of_audit_and_its_batches(audit, tmp_path: Path) -> None:
    audit()
    audit(full=True)

    pages = sorted(tmp_path.glob("reports/audit-*.html"))
    assert len(pages) == 2
    batch_page, full_page = (p.read_text(encoding="utf-8") for p in pages)
    assert 'data-kind="batches"' in batch_page
    assert "Batch audit: batches 1 to 1, after the last passing audit (through batch 0)." in (
        batch_page
    )
    assert 'data-kind="full"' in full_page and "Full audit: every batch, 0 to 1." in full_page
    # The index's runs, newest first, each with what it audited (read as cells, not markup).
    runs = read_page(tmp_path / "reports" / "index.html").body_rows("runs")
    assert [[cell for cell in row if cell in ("full", "batch 1")] for row in runs] == [
        ["full"],
        ["batch 1"],
    ]


# --- The marks table -----------------------------------------------------------------------


def test_the_writer_appends_marks_and_the_auditor_reads_them(engine_of: Engine) -> None:
    with engine_of.connect() as conn:
        held = {
            (role, privilege, relation): conn.execute(
                text("SELECT has_table_privilege(:role, :relation, :privilege)"),
                {"role": role, "relation": relation, "privilege": privilege},
            ).scalar()
            for role in ("ledger_writer", "ledger_auditor", "ledger_reader")
            for privilege in ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE")
            for relation in ("ledger_audit_marks", "ledger_audit_scope")
        }
    assert sorted(key for key, granted in held.items() if granted) == [
        ("ledger_auditor", "SELECT", "ledger_audit_marks"),
        ("ledger_auditor", "SELECT", "ledger_audit_scope"),
        ("ledger_writer", "INSERT", "ledger_audit_marks"),
        ("ledger_writer", "SELECT", "ledger_audit_marks"),
        ("ledger_writer", "SELECT", "ledger_audit_scope"),
    ]
