"""The DAGs run any ledger, as they run the bank: the seed's simple trade example (a user's own
module) and a ledger drawn by the hypothesis app generator under hostile names, side by side in
one database, each through `ledger_pipeline` (its micro-batches checked against `run_serial`,
its batch audit and report) and then `ledger_replay` (the replay and the full audit)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ledger_engine import run_serial
from ledger_engine.apps import load_ledger
from ledger_engine.pipeline.inbox import write_event_files
from ledger_engine.store.database import connect, ledger_url
from ledger_engine.store.state import snapshot_rows
from tests.dags.conftest import Runner

TESTS = Path(__file__).parents[1]
APPS = {
    "simple trade": (
        f"{TESTS / 'support' / 'apps' / 'simple_trade.py'}:build_ledger",
        lambda: sys.modules["simple_trade"].sample_events(300, accounts=20, seed=21),
    ),
    "generated": (
        f"{TESTS / 'engine' / 'generated_apps.py'}:build_sample_ledger",
        lambda: sys.modules["generated_apps"].sample_events(),
    ),
}
PIPELINE_TASKS = [
    "run_micro_batches",
    "great_expectations_checkpoint",
    "merkle_snapshot_check",
    "write_audit_report",
]


@pytest.mark.parametrize("app", list(APPS))
def test_the_pipeline_and_replay_dags_run_a_users_ledger_green(
    app: str,
    dag_runner: Runner,
    airflow_env: dict[str, str],
    ledger_database_url: str,
    tmp_path: Path,
) -> None:
    spec, sample = APPS[app]
    ledger = load_ledger(spec)
    events = sample()
    data_dir = tmp_path / "ledger"
    write_event_files(events, data_dir / "inbox", events_per_file=len(events) // 3 + 1)
    env = airflow_env | {
        "LEDGER_DATABASE_URL": ledger_database_url,
        "LEDGER_DATA_DIR": str(data_dir),
        "LEDGER_APP": spec,
        "LEDGER_SPARK_MASTER": "local[2]",
        "LEDGER_FILES_PER_BATCH": "1",
        "LEDGER_EXPECTATIONS": str(tmp_path / "expectations"),
    }

    pipeline = dag_runner("test", env, tmp_path, "pipeline")
    assert pipeline["task_states"] == dict.fromkeys(PIPELINE_TASKS, "success")
    summary = pipeline["xcom"]["run_micro_batches"]
    expected = run_serial(ledger, events)
    assert (summary["batches"], summary["ingested"]) == (3, len(events))
    assert summary["applied"] == expected.applied_count
    assert pipeline["xcom"]["write_audit_report"]["passed"] is True

    engine = connect(ledger_url(ledger_database_url, ledger))
    try:
        with engine.connect() as conn:
            for table in ledger.tables.values():
                assert dict(snapshot_rows(conn, table)) == expected.state[table.name]
    finally:
        engine.dispose()

    replay = dag_runner("test", env, tmp_path, "replay", "ledger_replay")
    assert replay["state"] == "success", replay["task_states"]
    report = replay["xcom"]["write_audit_report"]
    assert report["passed"] is True and report["scope"]["kind"] == "full"
