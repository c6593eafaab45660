"""The `ledger_replay` DAG: it parses without importing the platform, runs daily unless told
otherwise, and a whole run with `dag.test()` on a ledger changed behind the engine's back fails,
naming the difference in its log and on the audit report page it writes.

Each Airflow call runs in a subprocess (`dag_runner.py`) with an isolated AIRFLOW_HOME and the
`LEDGER_*` settings of the test: see conftest.py.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import text

from ledger_engine.store.database import connect
from tests.audit.conftest import deposit, jsonl
from tests.dags.conftest import DAGS_FOLDER, RUNNER, Runner, run_logged

DAG_ID = "ledger_replay"


def test_the_replay_dag_parses_without_importing_the_platform(parsed: dict) -> None:
    assert parsed["import_errors"] == {}
    assert Path(parsed["dags"][DAG_ID]["fileloc"]).name == "ledger_replay.py"
    assert parsed["modules_loaded_by_parsing"] == []


def test_it_runs_daily_one_run_at_a_time_with_one_task(parsed: dict) -> None:
    dag = parsed["dags"][DAG_ID]
    assert dag["schedule"] == "@daily"
    assert dag["catchup"] is False
    assert dag["max_active_runs"] == 1
    assert {"ledger", "audit", "replay"} <= set(dag["tags"])
    assert dag["params"] == [], "the DAG needs no params or run conf"
    assert dag["task_ids"] == ["replay_event_log"]
    assert dag["tasks"]["replay_event_log"]["retries"] == 0


@pytest.mark.parametrize(("setting", "schedule"), [("none", None), ("0 3 * * *", "0 3 * * *")])
def test_the_schedule_can_be_changed_or_turned_off(
    dag_runner: Runner,
    airflow_base_env: dict[str, str],
    tmp_path: Path,
    setting: str,
    schedule: str | None,
) -> None:
    env = airflow_base_env | {"LEDGER_REPLAY_SCHEDULE": setting}
    found = dag_runner("parse", env, tmp_path, "parse-schedule")
    assert found["import_errors"] == {}
    assert found["dags"][DAG_ID]["schedule"] == schedule


def test_a_run_on_a_tampered_ledger_fails_naming_the_difference(
    airflow_env: dict[str, str],
    make_database_url: Callable[..., str],
    commit_files,
    tmp_path: Path,
) -> None:
    url = make_database_url()
    engine = connect(url)
    try:
        deposits = jsonl(
            deposit("d1", "alice", "gold", 100, 10), deposit("d2", "bob", "gold", 80, 8)
        )
        commit_files(engine, 0, [("0001.jsonl", deposits)])
        with engine.begin() as conn:
            conn.execute(text("UPDATE accounts SET value = 81 WHERE key = 'bob'"))
    finally:
        engine.dispose()
    data_dir = tmp_path / "ledger"
    env = airflow_env | {"LEDGER_DATABASE_URL": url, "LEDGER_DATA_DIR": str(data_dir)}
    out, log_path = tmp_path / "run.json", tmp_path / "run.log"

    run_logged(
        [sys.executable, str(RUNNER), "test", str(DAGS_FOLDER), str(out), DAG_ID], env, log_path,
        cwd=tmp_path,
    )  # fmt: skip

    run = json.loads(out.read_text(encoding="utf-8"))
    log = log_path.read_text(encoding="utf-8", errors="replace")
    finding = "accounts 'bob': stored 81, the serial runner gives 80"
    assert run["task_states"] == {"replay_event_log": "failed"}, log[-3000:]
    assert run["state"] == "failed"
    assert "check failed: replay: table accounts" in log
    assert finding in log
    [page] = (data_dir / "reports").glob("audit-*.html")
    assert finding.replace("'", "&#x27;") in page.read_text(encoding="utf-8")
