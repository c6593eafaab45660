"""The DAGs run any ledger, as they run the bank: the seed's simple trade example (a user's own
module) and a ledger drawn by the hypothesis app generator under hostile names, side by side in
one database, each through `ledger_pipeline` (its micro-batches checked against `run_serial`,
its batch audit and report) and then `ledger_replay` (the replay and the full audit).

The four runs go one after the other in the session's one DAG-running process (`dag_sequence`,
tests/dags/conftest.py), as a worker runs one task after another: every run starts its Spark
session on the JVM the first run of the session started, instead of paying a process's
start-up and a cold JVM each."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ledger_engine import run_serial
from ledger_engine.apps import load_ledger
from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.core.records import Event
from ledger_engine.pipeline.event_inbox import write_event_files
from ledger_engine.store.database import connect, ledger_url
from ledger_engine.store.state import state_rows
from tests.support.airflow_dags import Sequence

TESTS = Path(__file__).parents[1]
APPS = {
    "simple trade": (
        f"{TESTS / 'support' / 'apps' / 'simple_trade.py'}:build_ledger",
        lambda: sys.modules["simple_trade"].sample_events(300, accounts=20, seed=21),
    ),
    "generated": (
        f"{TESTS / 'support' / 'generated_apps.py'}:build_sample_ledger",
        lambda: sys.modules["support.generated_apps"].sample_events(),
    ),
}
PIPELINE_TASKS = [
    "run_micro_batches",
    "great_expectations_checkpoint",
    "merkle_snapshot_check",
    "write_audit_report",
]


@dataclass(frozen=True)
class Landed:
    """One application's ledger, the events landed for it, and its runs' results."""

    ledger: StreamingLedger
    events: list[Event]
    pipeline: dict[str, Any]
    replay: dict[str, Any]


@pytest.fixture(scope="module")
def landed(
    airflow_env: dict[str, str],
    dag_sequence: Sequence,
    ledger_database_url: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Landed]:
    """Each application's events landed in a data folder of its own, then `ledger_pipeline`
    and `ledger_replay` run over each, side by side in the module's one database."""
    workdir = tmp_path_factory.mktemp("any_ledger_dags")
    env = airflow_env | {
        "LEDGER_DATABASE_URL": ledger_database_url,
        "LEDGER_SPARK_MASTER": "local[2]",
        "LEDGER_FILES_PER_BATCH": "1",
    }
    ledgers, runs = {}, []
    for n, (app, (spec, sample)) in enumerate(APPS.items()):
        ledger = load_ledger(spec)
        events = sample()
        data_dir = workdir / f"app-{n}" / "ledger"
        write_event_files(events, data_dir / "inbox", events_per_file=len(events) // 3 + 1)
        app_env = {
            "LEDGER_DATA_DIR": str(data_dir),
            "LEDGER_APP": spec,
            "LEDGER_EXPECTATIONS": str(workdir / f"app-{n}" / "expectations"),
        }
        ledgers[app] = (ledger, events)
        runs += [
            {"name": f"pipeline-{n}", "dag_id": "ledger_pipeline", "env": app_env},
            {"name": f"replay-{n}", "dag_id": "ledger_replay", "env": app_env},
        ]
    done = dag_sequence(runs, env, workdir, "runs")
    return {
        app: Landed(ledger, events, pipeline=done[2 * n], replay=done[2 * n + 1])
        for n, (app, (ledger, events)) in enumerate(ledgers.items())
    }


@pytest.mark.parametrize("app", list(APPS))
def test_the_pipeline_and_replay_dags_run_a_users_ledger_green(
    app: str, landed: dict[str, Landed], ledger_database_url: str
) -> None:
    ledger, events, pipeline = landed[app].ledger, landed[app].events, landed[app].pipeline
    assert pipeline["task_states"] == dict.fromkeys(PIPELINE_TASKS, "success")
    summary = pipeline["xcom"]["run_micro_batches"]
    expected = run_serial(ledger, events)
    assert (summary["batches"], summary["ingested"]) == (3, len(events))
    assert summary["applied"] == expected.applied_count
    assert pipeline["xcom"]["write_audit_report"]["passed"] is True

    # The replay, a full audit, changes no table: what they hold is what the pipeline left.
    engine = connect(ledger_url(ledger_database_url, ledger))
    try:
        with engine.connect() as conn:
            for table in ledger.tables.values():
                assert dict(state_rows(conn, table)) == expected.state[table.name]
    finally:
        engine.dispose()

    replay = landed[app].replay
    assert replay["state"] == "success", replay["task_states"]
    report = replay["xcom"]["write_audit_report"]
    assert report["passed"] is True and report["scope"]["kind"] == "full"
