"""Fixtures for the DAG tests: an isolated Airflow home, a fresh ledger database, and a way to
run `tests/dags/dag_runner.py` in a subprocess with exactly the environment a test chose.

Airflow reads its configuration (AIRFLOW_HOME, the metadata database, the DAGs folder) when it
is first imported, so every Airflow call happens in a subprocess: nothing Airflow configures
(logging, settings) leaks into the pytest process or into other tests.

PostgreSQL comes from `pg_server_url` (tests/conftest.py): the server at LEDGER_DATABASE_URL
when that is set, otherwise an embedded pgserver started for the session and stopped after it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DAGS_FOLDER = REPO_ROOT / "dags"
RUNNER = Path(__file__).with_name("dag_runner.py")
TRIGGER_WATCH = Path(__file__).with_name("trigger_watch.py")
RUN_MARK = "dag_runner: run "  # dag_runner.RUN_MARK (a script of its own, not imported here)
DAG_SCHEDULE = Path(__file__).with_name("dag_schedule.py")
# ledger_pipeline's tasks, in their order.
PIPELINE_TASKS = [
    "run_micro_batches",
    "great_expectations_checkpoint",
    "merkle_snapshot_check",
    "write_audit_report",
]
SUBPROCESS_TIMEOUT = 600  # seconds; a whole dag.test() takes well under a minute here


def inherited_environment() -> dict[str, str]:
    """This process's environment without any Airflow or ledger setting of the caller's."""
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AIRFLOW", "LEDGER_", "_AIRFLOW"))
    }


def run_logged(args: list[str], env: dict[str, str], log_path: Path, cwd: Path) -> None:
    """Run a command with its output in `log_path`; fail the test, showing the log's tail,
    if it exits non-zero."""
    with log_path.open("w", encoding="utf-8") as log:
        completed = subprocess.run(
            args,
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            timeout=SUBPROCESS_TIMEOUT,
            check=False,
        )
    if completed.returncode != 0:
        tail = "\n".join(log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-60:])
        pytest.fail(f"{' '.join(args)} exited {completed.returncode}; end of {log_path}:\n{tail}")


# A structured record of a DAG run's log: `<timestamp> [<level>   ] <message> ...`.
LOG_RECORD = re.compile(r"^\d{4}-\d\d-\d\dT\S+ \[(\w+)\s*\] (.*)$")


def task_log_lines(run_log: Path, task_id: str) -> list[str]:
    """The lines of a `dag.test()` run's log (`run_log`) from task `task_id`'s start to its
    end."""
    lines = run_log.read_text(encoding="utf-8", errors="replace").splitlines()
    start = next(i for i, line in enumerate(lines) if f"starting task_id={task_id}" in line)
    end = next(i for i, line in enumerate(lines) if f"end task task_id={task_id}" in line)
    return lines[start : end + 1]


def python_json(*args: str, env: dict[str, str], cwd: Path = REPO_ROOT) -> Any:
    """Run this Python with `args` (`-c SCRIPT ...`, or a script file and its arguments) in a
    subprocess with `env`; what its last line of output says, as JSON (it must exit 0, else
    the test fails showing the end of its stderr)."""
    done = subprocess.run(
        [sys.executable, *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def schedule_of(dag_id: str, env: dict[str, str]) -> dict[str, Any]:
    """What `dag_id`'s schedule says as Airflow parsed it with `env` (`dag_schedule.py`)."""
    return python_json(str(DAG_SCHEDULE), str(DAGS_FOLDER), dag_id, env=env)


def run_dag_runner(
    mode: str, env: dict[str, str], workdir: Path, name: str, dag_id: str | None = None
) -> dict[str, Any]:
    """Run `dag_runner.py MODE` (on `dag_id`, default `ledger_pipeline`) and return the JSON
    it wrote; its log is `<name>.log`."""
    out = workdir / f"{name}.json"
    run_logged(
        [
            sys.executable,
            str(RUNNER),
            mode,
            str(DAGS_FOLDER),
            str(out),
            *([dag_id] if dag_id else []),
        ],
        env,
        workdir / f"{name}.log",
        cwd=workdir,
    )
    return json.loads(out.read_text(encoding="utf-8"))


def run_dag_sequence(
    runs: list[dict[str, Any]], env: dict[str, str], workdir: Path, name: str
) -> list[dict[str, Any]]:
    """Run `dag_runner.py sequence`: whole DAG runs (`{"name": ..., "dag_id": ..., "env":
    {...}}`, each with its own settings over `env`) one after the other in one process, whose
    start-up and Spark JVM they share; what each run gave, in order. The process's log is
    `<name>.log`, each run's part of it `<its name>.log`, both in `workdir`."""
    out, log_path = workdir / f"{name}.json", workdir / f"{name}.log"
    run_logged(
        [sys.executable, str(RUNNER), "sequence", str(DAGS_FOLDER), str(out), json.dumps(runs)],
        env,
        log_path,
        cwd=workdir,
    )
    text = log_path.read_text(encoding="utf-8", errors="replace")
    # What comes before the first run's mark is the process's start-up.
    parts = re.split(rf"^{re.escape(RUN_MARK)}\d+: .*$", text, flags=re.MULTILINE)[1:]
    for run, part in zip(runs, parts, strict=True):
        (workdir / f"{run['name']}.log").write_text(part, encoding="utf-8")
    return json.loads(out.read_text(encoding="utf-8"))


# The `dag_runner` fixture: (mode, env, workdir, name[, dag_id]) -> the JSON that
# dag_runner.py wrote.
Runner = Callable[..., dict[str, Any]]


@pytest.fixture(scope="session")
def dag_runner() -> Runner:
    """`run_dag_runner`, for tests: `dag_runner(mode, env, workdir, name) -> result`."""
    return run_dag_runner


@pytest.fixture(scope="session")
def airflow_base_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment of an Airflow installation of its own: a temporary AIRFLOW_HOME, a SQLite
    metadata database in it, this repository's dags/ and no example DAGs."""
    home = tmp_path_factory.mktemp("airflow_home")
    return inherited_environment() | {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS_FOLDER),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "SPARK_LOCAL_IP": "127.0.0.1",
        # Spark's Python workers run PYSPARK_PYTHON, else whatever `python3` is on PATH; the
        # `spark.pyspark.python` that ledger_engine.runtime.spark.session sets does not reach them.
        # Without this they import `ledger_engine` only when started from the repository root.
        "PYSPARK_PYTHON": sys.executable,
    }


@pytest.fixture(scope="session")
def parsed(
    dag_runner: Runner,
    airflow_base_env: dict[str, str],
    tmp_path_factory: pytest.TempPathFactory,
) -> dict:
    """What `DagBag` makes of the dags/ folder with no `LEDGER_*` schedule set, parsed once
    for every DAG's tests."""
    return dag_runner("parse", airflow_base_env, tmp_path_factory.mktemp("parse"), "parse")


@pytest.fixture(scope="session")
def airflow_env(airflow_base_env: dict[str, str]) -> dict[str, str]:
    """`airflow_base_env` with its metadata database migrated (`dag.test()` needs it)."""
    home = Path(airflow_base_env["AIRFLOW_HOME"])
    run_logged(
        [sys.executable, "-m", "airflow", "db", "migrate"],
        airflow_base_env,
        home / "db-migrate.log",
        cwd=home,
    )
    return airflow_base_env


@pytest.fixture(scope="module")
def ledger_database_url(module_empty_database_url: str) -> str:
    """URL of a new, empty database for one test module's ledgers (tests/conftest.py), dropped
    afterwards. The pipeline applies each ledger's schema itself."""
    return module_empty_database_url
