"""The `ledger_pipeline` DAG: it parses cleanly, and whole runs with `dag.test()` commit events to
a real PostgreSQL, run the batch audit over the batches they committed (leaving its mark when
every check passed), and fail visibly when a run's batches carry on from a balance changed
behind the engine's back.

Each Airflow call runs in a subprocess (`dag_runner.py`) with an isolated AIRFLOW_HOME and the
`LEDGER_*` settings of the test: see conftest.py. The whole runs (the first, the run of a
ledger whose micro-batches fail, the run after a balance changed) go one after the other in
the session's one DAG-running process (`dag_sequence`: they share its start-up and its JVM).
"""

from __future__ import annotations

import html
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text

from ledger_engine.apps.bank.generator import generate_events
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.core.records import Event
from ledger_engine.pipeline.event_inbox import write_event_files
from ledger_engine.store.database import connect, ledger_url
from tests.support.airflow_dags import (
    LOG_RECORD,
    PIPELINE_TASKS,
    Runner,
    Sequence,
    log_tail,
    task_log_lines,
)
from tests.support.database import single_value
from tests.support.html_page import read_page

DAG_ID = "ledger_pipeline"
TASKS = PIPELINE_TASKS
AUDIT_TASKS = ["great_expectations_checkpoint", "merkle_snapshot_check"]
EVENTS = 2_000
ACCOUNTS = 100
EVENTS_PER_FILE = 500
FILES_PER_BATCH = 2


# --- Parsing ------------------------------------------------------------------------------


def test_dags_folder_imports_without_errors(parsed: dict) -> None:
    assert parsed["import_errors"] == {}
    assert sorted(parsed["dags"]) == [DAG_ID, "ledger_reconcile", "ledger_replay"]
    assert Path(parsed["dags"][DAG_ID]["fileloc"]).name == "ledger_pipeline.py"
    assert Path(parsed["dags"]["ledger_replay"]["fileloc"]).name == "ledger_replay.py"


def test_parsing_reads_only_the_settings(parsed: dict) -> None:
    # Only the settings at parse time: task bodies import the rest of ledger_engine (and so
    # Spark and Great Expectations) lazily.
    assert parsed["modules_loaded_by_parsing"] == []


def test_dag_settings(parsed: dict) -> None:
    dag = parsed["dags"][DAG_ID]
    # When it runs (the event inbox's asset, or a cron): test_pipeline_schedule.py.
    assert dag["catchup"] is False
    assert dag["max_active_runs"] == 1
    assert {"ledger", "audit"} <= set(dag["tags"])
    assert dag["params"] == [], "the DAG needs no params or run conf"


def test_the_schedule_can_be_changed_or_turned_off(
    dag_runner: Runner, airflow_base_env: dict[str, str], tmp_path: Path
) -> None:
    env = airflow_base_env | {"LEDGER_DAG_SCHEDULE": "none"}
    manual_only = dag_runner("parse", env, tmp_path, "parse-manual")
    assert manual_only["import_errors"] == {}
    assert manual_only["dags"][DAG_ID]["timetable"] == "NullTimetable"
    assert manual_only["dags"][DAG_ID]["first_run"] is None


def test_tasks_and_their_dependencies(parsed: dict) -> None:
    dag = parsed["dags"][DAG_ID]
    assert dag["task_ids"] == TASKS, "topological order"
    tasks = dag["tasks"]
    assert tasks["run_micro_batches"]["upstream"] == []
    assert tasks["great_expectations_checkpoint"]["upstream"] == ["run_micro_batches"]
    assert tasks["merkle_snapshot_check"]["upstream"] == ["great_expectations_checkpoint"]
    assert set(tasks["write_audit_report"]["upstream"]) == set(TASKS[:-1])
    assert tasks["write_audit_report"]["downstream"] == [], "the report is the only leaf"
    assert [t for t in TASKS if not tasks[t]["downstream"]] == ["write_audit_report"]
    assert tasks["run_micro_batches"]["trigger_rule"] == "all_success"
    for task_id in [*AUDIT_TASKS, "write_audit_report"]:
        assert tasks[task_id]["trigger_rule"] == "all_done", task_id


# --- Whole runs against PostgreSQL --------------------------------------------------------


@dataclass
class Ledger:
    """One ledger deployment driven by the DAG: its environment, folders and database."""

    env: dict[str, str]
    workdir: Path
    data_dir: Path
    engine: Engine
    sequence: Sequence

    def run_dag(self, name: str) -> dict[str, Any]:
        """One whole DAG run with `dag.test()`; its log is `<workdir>/<name>.log`."""
        run = {"name": name, "dag_id": DAG_ID, "env": {}}
        return self.sequence([run], self.env, self.workdir, f"{name}-sequence")[0]

    def log_tail(self, name: str, lines: int = 80) -> str:
        """The end of a run's log, to show with a failed assertion."""
        return log_tail(self.workdir, name, lines)

    def scalar(self, query: str) -> Any:
        return single_value(self.engine, query)

    def reports(self) -> list[Path]:
        return sorted((self.data_dir / "reports").glob("audit-*.html"))


def make_ledger(
    sequence: Sequence, airflow_env: dict[str, str], database_url: str, workdir: Path, **env: str
) -> Ledger:
    """A ledger on `database_url` with a generated bank workload landed in its inbox; `env`
    overrides its `LEDGER_*` settings."""
    data_dir = workdir / "ledger"
    settings = {
        "LEDGER_DATABASE_URL": database_url,
        "LEDGER_DATA_DIR": str(data_dir),
        "LEDGER_SPARK_MASTER": "local[2]",
        "LEDGER_FILES_PER_BATCH": str(FILES_PER_BATCH),
    }
    events = generate_events(EVENTS, accounts=ACCOUNTS, seed=11)
    write_event_files(events, data_dir / "inbox", events_per_file=EVENTS_PER_FILE)
    engine = connect(ledger_url(database_url, build_ledger()))  # the bank's schema
    return Ledger(airflow_env | settings | env, workdir, data_dir, engine, sequence)


@pytest.fixture(scope="module")
def ledger(
    dag_sequence: Sequence,
    airflow_env: dict[str, str],
    ledger_database_url: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Ledger]:
    """A fresh database and data folder with a generated bank workload landed in the inbox."""
    workdir = tmp_path_factory.mktemp("ledger_dag")
    ledger = make_ledger(dag_sequence, airflow_env, ledger_database_url, workdir)
    try:
        yield ledger
    finally:
        ledger.engine.dispose()


@pytest.fixture(scope="module")
def broken(
    dag_sequence: Sequence,
    airflow_env: dict[str, str],
    module_make_database_url: Callable[..., str],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Ledger]:
    """A ledger of its own whose Spark master URL Spark cannot parse: its micro-batch task
    fails at once."""
    workdir = tmp_path_factory.mktemp("broken_ledger_dag")
    url = module_make_database_url(migrated=False)
    ledger = make_ledger(dag_sequence, airflow_env, url, workdir, LEDGER_SPARK_MASTER="bogus://x")
    try:
        yield ledger
    finally:
        ledger.engine.dispose()


@pytest.fixture(scope="module")
def runs(ledger: Ledger, broken: Ledger, airflow_env: dict[str, str]) -> dict[str, Any]:
    """The DAG's first run over the landed workload ("first-run") and a run of the broken
    ledger ("broken-run"), one after the other (`dag_sequence`); each run's log is
    `<its name>.log` in its ledger's workdir."""
    done = ledger.sequence(
        [
            {"name": "first-run", "dag_id": DAG_ID, "env": ledger.env},
            {"name": "broken-run", "dag_id": DAG_ID, "env": broken.env},
        ],
        airflow_env,
        ledger.workdir,
        "runs",
    )
    shutil.move(ledger.workdir / "broken-run.log", broken.workdir / "broken-run.log")
    return {"first-run": done[0], "broken-run": done[1]}


@pytest.fixture(scope="module")
def first_run(runs: dict[str, Any]) -> dict[str, Any]:
    """The DAG's first run over the landed workload."""
    return runs["first-run"]


def test_a_run_commits_every_event_and_passes_every_audit(
    ledger: Ledger, first_run: dict[str, Any]
) -> None:
    assert first_run["task_states"] == dict.fromkeys(TASKS, "success"), ledger.log_tail("first-run")
    assert first_run["state"] == "success"

    summary = first_run["xcom"]["run_micro_batches"]
    expected_batches = -(-EVENTS // EVENTS_PER_FILE) // FILES_PER_BATCH
    assert summary["batches"] == expected_batches
    assert (summary["first_batch"], summary["last_batch"]) == (0, expected_batches - 1)
    assert summary["ingested"] == EVENTS
    assert summary["applied"] + summary["rejected"] + summary["duplicates"] == EVENTS
    assert summary["applied"] > 0

    assert ledger.scalar("SELECT count(*) FROM ledger_batches") == expected_batches
    assert ledger.scalar("SELECT sum(events_ingested) FROM ledger_batches") == EVENTS
    assert ledger.scalar("SELECT sum(applied) FROM ledger_batches") == summary["applied"]
    assert ledger.scalar("SELECT count(*) FROM ledger_events") == EVENTS
    assert ledger.scalar("SELECT count(*) FROM accounts") == ACCOUNTS

    for task_id in AUDIT_TASKS:
        audit = first_run["xcom"][task_id]
        assert audit["checks"] > 0
        assert audit["passed"] == audit["checks"]
        assert audit["failed"] == []

    report = first_run["xcom"]["write_audit_report"]
    assert report["passed"] is True
    # The batch audit: every batch the run committed, none before (there were none).
    scope = report["scope"]
    assert (scope["kind"], scope["first_batch"], scope["last_batch"]) == (
        "batches",
        0,
        expected_batches - 1,
    )
    assert ledger.scalar("SELECT count(*) FROM ledger_audit_marks") == 1
    assert ledger.scalar("SELECT audited_through FROM ledger_audit_marks") == expected_batches - 1
    page = Path(report["report"])
    assert page.parent == ledger.data_dir / "reports"
    assert "All audits passed." in page.read_text(encoding="utf-8")
    # The page says which DAG run wrote it and which batches that run added; the index too.
    shown = read_page(page)
    run = first_run["run_id"]
    assert shown.text_in("written-by") == (
        f"Written by DAG {DAG_ID}, DAG run {run}, task write_audit_report."
    )
    added = f"batches 0–{expected_batches - 1}"
    assert shown.text_in("batches-added").startswith(
        f"The pipeline run before this audit added {added}: {expected_batches} batches of"
        f" {EVENTS:,} events"
    )
    row = read_page(page.parent / "index.html").text_in(page.stem)
    assert f"airflow {DAG_ID} {run} (task write_audit_report) {added}, {EVENTS:,} events" in row


# --- The micro-batch task's log ---------------------------------------------------------------

# Airflow shows a line a task writes straight to stderr as an ERROR whatever it says, so a
# successful run's log holds only log records. `dag.test()` runs the tasks in its own process,
# where a raw line appears unstructured in the run's log; in a scheduler's worker it would be
# one of Airflow's ERROR lines.
PROGRESS = re.compile(
    r"micro-batch (\d+): (\d+) events?, (\d+) applied, (\d+) rejected, (\d+) duplicates? "
    r"in [\d.]+ s, [\d.]+ events/s"
)


def test_a_successful_run_logs_no_error_and_no_raw_output(
    ledger: Ledger, first_run: dict[str, Any]
) -> None:
    assert first_run["task_states"]["run_micro_batches"] == "success"
    lines = task_log_lines(ledger.workdir / "first-run.log", "run_micro_batches")
    raw = [line for line in lines if not LOG_RECORD.match(line)]
    assert raw == [], "lines written straight to stdout or stderr"
    errors = [line for line in lines if LOG_RECORD.match(line).group(1) in ("error", "critical")]
    assert errors == []


def test_the_task_logs_one_progress_line_per_micro_batch(
    ledger: Ledger, first_run: dict[str, Any]
) -> None:
    lines = task_log_lines(ledger.workdir / "first-run.log", "run_micro_batches")
    progress = [m for line in lines if (m := PROGRESS.search(line))]
    summary = first_run["xcom"]["run_micro_batches"]
    assert [int(m.group(1)) for m in progress] == list(range(summary["batches"]))
    assert summary["batches"] == 2
    totals = [sum(int(m.group(i)) for m in progress) for i in (2, 3, 4, 5)]
    assert totals == [
        summary["ingested"],
        summary["applied"],
        summary["rejected"],
        summary["duplicates"],
    ]


def test_a_run_carrying_on_from_a_balance_changed_behind_the_engines_back_fails(
    ledger: Ledger, first_run: dict[str, Any]
) -> None:
    """The run's batch audit covers the batch it commits: a deposit into an account whose
    balance was changed behind the engine's back (after the last audit) starts from the
    changed balance, which breaks that account's change-log chain in the new batch. (A changed
    balance that no later batch writes is the daily full audit's to find:
    tests/dags/test_replay_dag.py, tests/audit/test_batch_audit.py.)"""
    assert first_run["state"] == "success", ledger.log_tail("first-run")
    reports_before = ledger.reports()
    with ledger.engine.begin() as conn:
        [(changed_key, was)] = conn.execute(
            text(
                "UPDATE accounts SET value = value + 1 WHERE key = (SELECT min(key) FROM accounts)"
                " RETURNING key, value - 1"
            )
        ).all()
    late_deposit = {"account_id": changed_key, "asset_id": "asset-late", "amount": 7}
    write_event_files(
        [Event("deposits", "late-deposit", late_deposit | {"asset_amount": 1})],
        ledger.data_dir / "inbox",
        prefix="late",
    )

    second = ledger.run_dag("tampered-run")

    states = second["task_states"]
    assert second["state"] == "failed", ledger.log_tail("tampered-run")
    assert states["run_micro_batches"] == "success"
    assert second["xcom"]["run_micro_batches"]["batches"] == 1
    assert states["great_expectations_checkpoint"] == "failed"
    # The chain and the Merkle digests agree with the change log: the engine recorded what it
    # did, from what it read.
    assert states["merkle_snapshot_check"] == "success"
    assert states["write_audit_report"] == "failed", "the leaf fails, so the run fails"
    assert "write_audit_report" not in second["xcom"]
    new_batch = second["xcom"]["merkle_snapshot_check"]["scope"]["last_batch"]
    assert second["xcom"]["merkle_snapshot_check"]["scope"]["first_batch"] == new_batch

    log = (ledger.workdir / "tampered-run.log").read_text(encoding="utf-8", errors="replace")
    assert "audit check(s) failed" in log, "the audit task lists its failed checks"
    chain = "accounts change log in scope continues its chain"
    assert f"check failed: great_expectations: {chain}" in log
    # The report shows what the audit tasks found; it does not audit again.
    assert "merkle: 4 checks as merkle_snapshot_check published them" in log
    assert "checks as great_expectations_checkpoint published them" in log
    assert "auditing again" not in log
    assert ledger.scalar("SELECT count(*) FROM ledger_audit_marks") == 1, "no mark this time"

    new_reports = [p for p in ledger.reports() if p not in reports_before]
    assert len(new_reports) == 1, "the report is written even though the audits failed"
    page = new_reports[0].read_text(encoding="utf-8")
    assert "audit check(s) failed." in page
    assert f"Batch audit: batches {new_batch} to {new_batch}" in page
    assert f"key='{changed_key}', batch_id={new_batch}, position=0" in html.unescape(page)
    assert f"before={was + 1}, previous_after={was}" in page


def test_a_failed_micro_batch_run_is_still_audited_and_reported_and_fails_the_run(
    broken: Ledger, runs: dict[str, Any]
) -> None:
    run = runs["broken-run"]
    states = run["task_states"]
    assert states["run_micro_batches"] == "failed", broken.log_tail("broken-run")
    # Nothing was committed, and nothing committed is wrong: the audits pass...
    assert states["great_expectations_checkpoint"] == "success"
    assert states["merkle_snapshot_check"] == "success"
    assert broken.scalar("SELECT count(*) FROM ledger_batches") == 0
    # ...but the report says the micro-batches failed, and the run fails.
    assert states["write_audit_report"] == "failed"
    assert run["state"] == "failed"
    log = (broken.workdir / "broken-run.log").read_text(encoding="utf-8", errors="replace")
    assert "task did not succeed: run_micro_batches" in log
    [page] = broken.reports()
    assert "run_micro_batches committed the inbox" in page.read_text(encoding="utf-8")


# --- What the other tasks' logs say ----------------------------------------------------------


def test_the_task_logs_read_as_a_summary(ledger: Ledger, first_run: dict[str, Any]) -> None:
    batches = task_log_lines(ledger.workdir / "first-run.log", "run_micro_batches")
    said = "\n".join(batches)
    assert "Using incubator modules" not in said, "the JVM's banner"
    assert "spark.sql.adaptive.enabled" not in said, "a warning that says nothing to a user"

    audit = task_log_lines(ledger.workdir / "first-run.log", "great_expectations_checkpoint")
    assert any(
        re.search(
            r"Batch audit: batches 0 to 1, no audit having passed before: "
            r"(\d+) of \1 checks passed",
            line,
        )
        for line in audit
    ), "\n".join(audit)
    assert max(len(line) for line in audit) < 1_000, "no dictionary of every check on a line"
