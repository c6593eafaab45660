"""The `ledger_replay` DAG, the daily full audit: it parses without importing the platform, runs
daily unless told otherwise, passes on what the engine committed (leaving a full audit mark),
and a whole run with `dag.test()` on a ledger changed behind the engine's back fails, each of
its audits naming the difference in its log and on the one audit report page it writes.

Each Airflow call runs in a subprocess (`dag_runner.py`) with an isolated AIRFLOW_HOME and the
`LEDGER_*` settings of the test: see conftest.py. The two whole runs, over two ledgers of
their own, go one after the other in the session's one DAG-running process
(`dag_sequence`).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import text

from ledger_engine.store.database import connect
from tests.support.airflow_dags import Runner, Sequence
from tests.support.bank import deposit
from tests.support.events import event_file

DAG_ID = "ledger_replay"


def test_the_replay_dag_parses_reading_only_the_settings(parsed: dict) -> None:
    assert parsed["import_errors"] == {}
    assert Path(parsed["dags"][DAG_ID]["fileloc"]).name == "ledger_replay.py"
    assert parsed["modules_loaded_by_parsing"] == []


TASKS = [
    "merkle_snapshot_check",
    "great_expectations_checkpoint",
    "replay_event_log",
    "write_audit_report",
]


def test_it_runs_daily_one_run_at_a_time_with_the_full_audit(parsed: dict) -> None:
    dag = parsed["dags"][DAG_ID]
    assert dag["cron"] == "0 0 * * *", "@daily"
    assert dag["catchup"] is False
    assert dag["max_active_runs"] == 1
    assert {"ledger", "audit", "replay"} <= set(dag["tags"])
    assert dag["params"] == [], "the DAG needs no params or run conf"
    assert dag["task_ids"] == TASKS, "topological order"
    tasks = dag["tasks"]
    assert all(tasks[t]["retries"] == 0 for t in TASKS)
    assert [t for t in TASKS if not tasks[t]["downstream"]] == ["write_audit_report"]
    assert set(tasks["write_audit_report"]["upstream"]) == set(TASKS[:-1])
    for task_id in TASKS[1:]:
        assert tasks[task_id]["trigger_rule"] == "all_done", task_id


@pytest.mark.parametrize(
    ("setting", "timetable", "cron"),
    [("none", "NullTimetable", None), ("0 3 * * *", "CronTriggerTimetable", "0 3 * * *")],
)
def test_the_schedule_can_be_changed_or_turned_off(
    dag_runner: Runner,
    airflow_base_env: dict[str, str],
    tmp_path: Path,
    setting: str,
    timetable: str,
    cron: str | None,
) -> None:
    env = airflow_base_env | {"LEDGER_REPLAY_SCHEDULE": setting}
    found = dag_runner("parse", env, tmp_path, "parse-schedule")
    assert found["import_errors"] == {}
    assert found["dags"][DAG_ID]["timetable"] == timetable
    assert found["dags"][DAG_ID]["cron"] == cron


def committed_ledger(make_database_url: Callable[..., str], commit_files) -> str:
    """The URL of a new ledger of one committed batch: alice 100 and bob 80 in accounts."""
    url = make_database_url()
    engine = connect(url)
    try:
        deposits = event_file(
            [
                deposit("d1", "alice", 100, asset="gold", asset_amount=10),
                deposit("d2", "bob", 80, asset="gold", asset_amount=8),
            ]
        )
        commit_files(engine, 0, [("0001.jsonl", deposits)])
    finally:
        engine.dispose()
    return url


@dataclass(frozen=True)
class Run:
    """One whole run with `dag.test()` over a ledger: its states and return values, its
    log, the folder of its audit reports, and the ledger's URL."""

    result: dict
    log: str
    reports: Path
    url: str


@pytest.fixture(scope="module")
def runs(
    airflow_env: dict[str, str],
    dag_sequence: Sequence,
    module_make_database_url: Callable[..., str],
    commit_files,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Run]:
    """A whole run over a ledger as the engine committed it ("untouched") and one over a
    ledger whose bob was set to 81 behind the engine's back ("tampered"): two ledgers of
    their own, run one after the other (`dag_sequence`)."""
    workdir = tmp_path_factory.mktemp("replay_dag")
    urls = {
        "untouched": committed_ledger(module_make_database_url, commit_files),
        "tampered": committed_ledger(module_make_database_url, commit_files),
    }
    engine = connect(urls["tampered"])
    try:
        with engine.begin() as conn:
            conn.execute(text("UPDATE accounts SET value = 81 WHERE key = 'bob'"))
    finally:
        engine.dispose()
    data_dirs = {name: workdir / name / "ledger" for name in urls}
    done = dag_sequence(
        [
            {
                "name": name,
                "dag_id": DAG_ID,
                "env": {"LEDGER_DATABASE_URL": url, "LEDGER_DATA_DIR": str(data_dirs[name])},
            }
            for name, url in urls.items()
        ],
        airflow_env,
        workdir,
        "runs",
    )
    return {
        name: Run(
            result,
            (workdir / f"{name}.log").read_text(encoding="utf-8"),
            data_dirs[name] / "reports",
            urls[name],
        )
        for name, result in zip(urls, done, strict=True)
    }


def full_marks(url: str) -> list[tuple]:
    engine = connect(url)
    try:
        with engine.connect() as conn:
            query = "SELECT kind, first_batch, audited_through FROM ledger_audit_marks"
            return [tuple(row) for row in conn.execute(text(query))]
    finally:
        engine.dispose()


def test_a_run_on_what_the_engine_committed_passes_and_leaves_a_full_audit_mark(
    runs: dict[str, Run],
) -> None:
    run, log, reports = runs["untouched"].result, runs["untouched"].log, runs["untouched"].reports

    assert run["task_states"] == dict.fromkeys(TASKS, "success"), log[-3000:]
    assert run["xcom"]["write_audit_report"]["scope"]["kind"] == "full"
    assert full_marks(runs["untouched"].url) == [("full", 0, 0)]
    [page] = reports.glob("audit-*.html")
    text_of_page = page.read_text(encoding="utf-8")
    assert "All audits passed." in text_of_page and "Full audit: every batch, 0 to 0." in (
        text_of_page
    )


def test_a_run_on_a_tampered_ledger_fails_naming_the_difference(runs: dict[str, Run]) -> None:
    run, log, reports = runs["tampered"].result, runs["tampered"].log, runs["tampered"].reports

    finding = "accounts 'bob': stored 81, the serial runner gives 80"
    assert run["task_states"] == dict.fromkeys(TASKS, "failed"), log[-3000:]
    assert run["state"] == "failed"
    assert "check failed: replay: table accounts" in log
    assert finding in log
    assert "check failed: merkle: merkle root of accounts" in log
    assert "check failed: great_expectations: accounts equals the fold of its change log" in log
    [page] = reports.glob("audit-*.html")
    shown = html.unescape(page.read_text(encoding="utf-8"))
    assert finding in shown
    assert 'key "bob": recorded 80, found 81' in shown
    assert full_marks(runs["tampered"].url) == [], "a failing audit leaves no mark"
