"""Run by the DAG tests in a subprocess, so that Airflow reads its configuration (AIRFLOW_HOME,
its metadata database, the DAGs folder) and the ledger its `LEDGER_*` settings from an
environment the test prepared, and so that Airflow's logging set-up stays out of the pytest
process.

    python dag_runner.py parse DAGS_FOLDER OUT.json
        Parse the folder with `DagBag`; write import errors and each DAG's structure.
    python dag_runner.py test DAGS_FOLDER OUT.json [DAG_ID]
        Run the DAG once with `dag.test()`; write the run's state, each task's state and the
        tasks' return values (XCom).
    python dag_runner.py sequence DAGS_FOLDER OUT.json RUNS_JSON
        Whole runs one after the other in this one process, as `test` runs each: RUNS_JSON is
        a list of `{"dag_id": ..., "env": {...}}`, each run with this process's environment
        and its own `env` over it (its tasks read the `LEDGER_*` settings as they run). Every
        run after the first starts its Spark session on the JVM the first one started, which
        saves a start-up and a cold JVM per run. Writes the list of the runs' results; a line
        `dag_runner: run <n>: <dag_id>` in the output marks where each run's log starts.
    python -u dag_runner.py serve DAGS_FOLDER
        `sequence` for every request read from standard input, one JSON line each, until it
        closes: `{"out": OUT.json, "env": {...}, "runs": RUNS}`, each run with exactly `env`
        and its own `env` over it. Writes `{"runs": [...]}`, or `{"error": ...}` when a run
        raised, to OUT.json once the runs' output is written (whole: renamed into place). The
        test session's DAG runs share one start-up and one Spark JVM this way, as a worker's
        tasks do (tests/dags/conftest.py, `dag_sequence`).

Exits 0 once the JSON is written, whatever the DAG run's outcome: the test judges it.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# What parsing must not import: the DAG files read the settings (`ledger_engine.config`, pure
# Python) and import everything else inside their tasks.
LAZY_MODULES = (
    "pyspark",
    "great_expectations",
    "pgserver",
    "ledger_engine.runtime.spark",
    "ledger_engine.store",
    "ledger_engine.audit",
    "ledger_engine.pipeline.job",
)


def parse(dags_folder: Path) -> dict[str, Any]:
    from airflow.models import DagBag

    bag = DagBag(dag_folder=str(dags_folder))
    parsed_at = datetime.now(UTC)
    dags = {}
    for dag_id, dag in bag.dags.items():
        dags[dag_id] = {
            "fileloc": dag.fileloc,
            "timetable": type(dag.timetable).__name__,
            # A clock's cron expression (a preset spelled out), the asset's timetable's if any.
            "cron": getattr(getattr(dag.timetable, "timetable", dag.timetable), "expression", None),
            "first_run": _first_run(dag, parsed_at),
            "first_run_just_after_a_tick": _first_run(dag, JUST_AFTER_A_TICK),
            "catchup": dag.catchup,
            "max_active_runs": dag.max_active_runs,
            "tags": sorted(dag.tags),
            "params": sorted(dag.params.keys()),
            "task_ids": [t.task_id for t in dag.topological_sort()],
            "tasks": {
                t.task_id: {
                    "upstream": sorted(t.upstream_task_ids),
                    "downstream": sorted(t.downstream_task_ids),
                    "trigger_rule": getattr(t.trigger_rule, "value", str(t.trigger_rule)),
                    "retries": t.retries,
                }
                for t in dag.tasks
            },
        }
    return {
        "import_errors": {str(k): str(v) for k, v in bag.import_errors.items()},
        "dags": dags,
        # Parsing must not import the platform: task bodies import it lazily.
        "modules_loaded_by_parsing": sorted(
            m for m in LAZY_MODULES if any(n == m or n.startswith(m + ".") for n in sys.modules)
        ),
    }


# A minute after a tick of every ledger clock (midnight UTC; a quarter past, on the quarter):
# Airflow's cron timetable used to run a DAG switched on this soon after a tick at once.
JUST_AFTER_A_TICK = datetime(2026, 1, 1, 0, 1, tzinfo=UTC)


def _first_run(dag: Any, now: datetime) -> str | None:
    """When the scheduler would start the DAG's first automated run if it were switched on at
    `now`, as it decides it (from the serialized DAG, with no run before): "at once" for a time
    not after `now`, an ISO time for a later one, None for none (an asset-only schedule).
    The cron timetable reads the clock through `airflow.timetables.trigger.utcnow`, which is
    set to `now` meanwhile."""
    from airflow.serialization.serialized_objects import DagSerialization
    from airflow.timetables import trigger

    serialized = DagSerialization.from_dict(DagSerialization.to_dict(dag))
    clock = trigger.utcnow
    trigger.utcnow = lambda: now
    try:
        info = serialized.next_dagrun_info(last_automated_run_info=None)
    finally:
        trigger.utcnow = clock
    if info is None:
        return None
    return "at once" if info.run_after <= now else info.run_after.isoformat()


def run(dags_folder: Path, dag_id: str) -> dict[str, Any]:
    from airflow.models import DagBag
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    bag = DagBag(dag_folder=str(dags_folder))
    if bag.import_errors:
        raise SystemExit(f"import errors: {bag.import_errors}")
    dag = bag.dags[dag_id]
    dag_run = dag.test()
    with create_session() as session:
        tis = dag_run.get_task_instances(session=session)
        xcoms = session.scalars(
            XComModel.get_many(run_id=dag_run.run_id, dag_ids=dag_id, key="return_value")
        ).all()
        return {
            "run_id": dag_run.run_id,
            "state": str(dag_run.get_state()),
            "task_states": {ti.task_id: str(ti.state) for ti in tis},
            "xcom": {x.task_id: XComModel.deserialize_value(x) for x in xcoms},
        }


# The line `sequence` writes before each run's log: `dag_runner: run <n>: <dag_id>`.
RUN_MARK = "dag_runner: run "


def run_sequence(
    dags_folder: Path, runs: list[dict[str, Any]], base: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """`run` for each of `runs` in turn, each with its own settings over `base` (by default
    the environment this process started with)."""
    starting = dict(os.environ) if base is None else base
    results = []
    for n, each in enumerate(runs):
        os.environ.clear()
        os.environ.update(starting | each.get("env", {}))
        print(f"{RUN_MARK}{n}: {each['dag_id']}", flush=True)  # where its part of the log starts
        results.append(run(dags_folder, each["dag_id"]))
    return results


def serve(dags_folder: Path) -> None:
    """Run the sequence of each request on standard input (see the module's docstring)."""
    for line in sys.stdin:
        request = json.loads(line)
        try:
            result: dict[str, Any] = {
                "runs": run_sequence(dags_folder, request["runs"], request["env"])
            }
        except (Exception, SystemExit) as failed:  # the test that asked fails; others go on
            traceback.print_exc()
            result = {"error": f"{type(failed).__name__}: {failed}"}
        # Everything the runs wrote is in the log before the answer says they are done.
        sys.stdout.flush()
        sys.stderr.flush()
        out = Path(request["out"])
        partial = out.with_name(out.name + ".partial")
        partial.write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
        partial.replace(out)


def main(argv: list[str]) -> int:
    mode, dags_folder = argv[0], Path(argv[1])
    if mode == "serve":
        serve(dags_folder)
        return 0
    out = Path(argv[2])
    if mode == "parse":
        result = parse(dags_folder)
    elif mode == "test":
        result = run(dags_folder, argv[3] if len(argv) > 3 else "ledger_pipeline")
    elif mode == "sequence":
        result = run_sequence(dags_folder, json.loads(argv[3]))
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    out.write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
