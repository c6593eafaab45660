"""`ledger_engine.dags`, what the DAGs are made of, agrees with the platform its tasks call,
and the parts a DAG file imports at parse time leave the platform unloaded.

It spells the kinds of audit again (importing `ledger_engine.audit` at parse time would load
the platform), so they are compared here with `ledger_engine.audit.findings`'s, in a subprocess
with an Airflow home of its own, as every Airflow import in these tests (see conftest.py).
`ledger_reconcile` and `ledger_pipeline` also import their watchers' triggers
(`ledger_engine.reconcile.trigger`, `ledger_engine.pipeline.trigger`), which the DAG processor
loads with the DAG file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.support.airflow_dags import DAGS_FOLDER, REPO_ROOT, Runner, python_json

CHECK = """
from ledger_engine.audit.findings import BATCHES, FULL
from ledger_engine.dags import BATCH_AUDIT, FULL_AUDIT, PART_DOCS, PART_TASKS

assert (BATCH_AUDIT, FULL_AUDIT) == (BATCHES, FULL), (BATCH_AUDIT, FULL_AUDIT)
# Every part a DAG may run has a task id, and the full audit documents every one of them.
assert {part for part, _ in PART_DOCS} == set(PART_TASKS), PART_DOCS
assert {part for part, kind in PART_DOCS if kind == FULL} == set(PART_TASKS), PART_DOCS
print("agreed")
"""


def test_the_dags_name_the_kinds_of_audit_as_the_platform_does(
    airflow_base_env: dict[str, str],
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHECK],
        env=airflow_base_env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("agreed")


# What a DAG file must not load while it is parsed: the engine's Spark runtime, Great
# Expectations, the store and a database driver, and the jobs the tasks run.
PLATFORM = (
    "pyspark",
    "great_expectations",
    "pgserver",
    "psycopg2",
    "ledger_engine.runtime.spark",
    "ledger_engine.store",
    "ledger_engine.audit",
    "ledger_engine.reconcile.job",
    "ledger_engine.reconcile.run",
    "ledger_engine.reconcile.statement_inbox",
    "ledger_engine.reconcile.matching",
    "ledger_engine.tasks.reconcile_dag",
    "ledger_engine.pipeline.job",
    "ledger_engine.tasks.pipeline_dag",
)
PARSE_ONE = """
import json, runpy, sys
runpy.run_path(sys.argv[1])
platform = json.loads(sys.argv[2])
loaded = [m for m in platform if any(n == m or n.startswith(m + ".") for n in sys.modules)]
print(json.dumps(loaded))
"""


@pytest.mark.parametrize("dag_file", ["ledger_reconcile.py", "ledger_pipeline.py"])
def test_parsing_a_dag_and_its_watcher_loads_none_of_the_platform(
    airflow_base_env: dict[str, str], dag_file: str
) -> None:
    loaded = python_json(
        "-c", PARSE_ONE, str(DAGS_FOLDER / dag_file), json.dumps(PLATFORM), env=airflow_base_env
    )
    assert loaded == []


def test_switching_a_dag_on_starts_no_run_by_itself(
    dag_runner: Runner, airflow_base_env: dict[str, str], tmp_path: Path
) -> None:
    """Every ledger DAG on a clock (the pipeline's cron-only setting, the daily replay and
    reconciliation) has its first automated run at the clock's next tick, as the scheduler
    computes it for a DAG with no run yet: none for a tick that passed before it was switched
    on, so the run a person triggers next is the only one. The pipeline on its event asset
    has no clock at all."""
    on_clock = dag_runner(
        "parse", airflow_base_env | {"LEDGER_DAG_SCHEDULE": "*/15 * * * *"}, tmp_path, "clock"
    )
    assert on_clock["import_errors"] == {}
    firsts = {dag_id: dag["first_run"] for dag_id, dag in on_clock["dags"].items()}
    assert set(firsts) == {"ledger_pipeline", "ledger_replay", "ledger_reconcile"}
    for dag_id, first in firsts.items():
        assert first not in (None, "at once"), (dag_id, first)
        # The next tick: for the daily DAGs the coming midnight, UTC.
        tick = datetime.fromisoformat(first)
        assert tick > datetime.now(UTC) - timedelta(minutes=1)
        if dag_id != "ledger_pipeline":
            assert (tick.hour, tick.minute, tick.second) == (0, 0, 0), (dag_id, first)
            assert tick - datetime.now(UTC) <= timedelta(days=1), (dag_id, first)
    # Switched on a minute after a tick, too: Airflow's default runs the tick that just passed
    # within 10% of the interval (at least 5 minutes) of it, and `run_immediately=False` keeps
    # that default; the ledger DAGs wait for the next tick whatever the time.
    just_after = {d: dag["first_run_just_after_a_tick"] for d, dag in on_clock["dags"].items()}
    assert just_after == {
        "ledger_pipeline": "2026-01-01T00:15:00+00:00",
        "ledger_replay": "2026-01-02T00:00:00+00:00",
        "ledger_reconcile": "2026-01-02T00:00:00+00:00",
    }
    on_events = dag_runner("parse", airflow_base_env, tmp_path, "events")
    assert on_events["dags"]["ledger_pipeline"]["first_run"] is None
