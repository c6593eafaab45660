"""Running Airflow and the DAGs in subprocesses, for the DAG tests (tests/dags/): where the
repository's DAGs and the scripts that run them lie, `dag_runner.py` run once per call
(`run_dag_runner`) or serving whole runs for a test session (`DagRunServer`), any Python
whose last line of output is JSON (`python_json`), a DAG's schedule as Airflow parsed it
(`schedule_of`), and reading a run's log (`task_log_lines`). The fixtures built on these
(`dag_runner`, `dag_sequence`, the Airflow environments) are in tests/dags/conftest.py.

Airflow reads its configuration (AIRFLOW_HOME, the metadata database, the DAGs folder) when it
is first imported, so every Airflow call happens in a subprocess: nothing Airflow configures
(logging, settings) leaks into the pytest process or into other tests.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DAGS_FOLDER = REPO_ROOT / "dags"
# The scripts the DAG tests run in subprocesses (tests/dags/): `dag_runner.py` by its path, the
# other two as modules from the repository root (`python -m`), which their imports need.
RUNNER = REPO_ROOT / "tests" / "dags" / "dag_runner.py"
TRIGGER_WATCH = "tests.dags.trigger_watch"
RUN_MARK = "dag_runner: run "  # dag_runner.RUN_MARK (a script of its own, not imported here)
DAG_SCHEDULE = "tests.dags.dag_schedule"
# ledger_pipeline's tasks, in their order.
PIPELINE_TASKS = [
    "run_micro_batches",
    "great_expectations_checkpoint",
    "merkle_snapshot_check",
    "write_audit_report",
]
SUBPROCESS_TIMEOUT = 600  # seconds; a whole dag.test() takes well under a minute here


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


def log_tail(workdir: Path, name: str, lines: int = 80) -> str:
    """The end of the log of run `name` (`<workdir>/<name>.log`), to show with a failed
    assertion."""
    log = (workdir / f"{name}.log").read_text(encoding="utf-8", errors="replace")
    return "\n".join(log.splitlines()[-lines:])


def python_json(*args: str, env: dict[str, str], cwd: Path = REPO_ROOT) -> Any:
    """Run this Python with `args` (`-c SCRIPT ...`, `-m MODULE ...`, or a script file and its
    arguments) in a subprocess with `env`; what its last line of output says, as JSON (it must
    exit 0, else the test fails showing the end of its stderr)."""
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
    return python_json("-m", DAG_SCHEDULE, str(DAGS_FOLDER), dag_id, env=env)


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


# The `dag_runner` fixture: (mode, env, workdir, name[, dag_id]) -> the JSON that
# dag_runner.py wrote.
Runner = Callable[..., dict[str, Any]]


# The `dag_sequence` fixture: (runs, env, workdir, name) -> what each run gave, in order.
Sequence = Callable[[list[dict[str, Any]], dict[str, str], Path, str], list[dict[str, Any]]]


class DagRunServer:
    """`dag_runner.py serve` in a process of its own for the test session: whole DAG runs
    (`{"name": ..., "dag_id": ..., "env": {...}}`, each with its own settings over the
    environment a test gives) run one after the other in it, as a worker runs one task after
    another. The session's runs share its start-up (Python, Airflow) and its Spark JVM: every
    run after the first starts its Spark session on the JVM the first one started.

    Its output goes to one log; a sequence's part of it is copied to `<name>.log` in the
    test's folder, each run's part to `<its name>.log`."""

    def __init__(self, env: dict[str, str], workdir: Path) -> None:
        self.env = env
        self.log_path = workdir / "dag-runs.log"
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-u", str(RUNNER), "serve", str(DAGS_FOLDER)],
                env=env,
                cwd=workdir,
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                text=True,
            )

    def sequence(
        self, runs: list[dict[str, Any]], env: dict[str, str], workdir: Path, name: str
    ) -> list[dict[str, Any]]:
        """Run `runs` with `env` under each one's own; what each run gave, in order."""
        # Airflow read its configuration once, as the process started: a sequence may change
        # every other setting, not that.
        airflow = {k: v for k, v in env.items() if k.startswith(("AIRFLOW", "_AIRFLOW"))}
        assert airflow == {
            k: v for k, v in self.env.items() if k.startswith(("AIRFLOW", "_AIRFLOW"))
        }, "a DAG run with another Airflow configuration than the session's"
        out, log_path = workdir / f"{name}.json", workdir / f"{name}.log"
        start = self.log_path.stat().st_size
        request = {"out": str(out), "env": env, "runs": runs}
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        deadline = time.monotonic() + SUBPROCESS_TIMEOUT
        while not out.exists():
            ended = self.process.poll()
            if ended is not None or time.monotonic() > deadline:
                tail = self._log_since(start)[-10000:]
                state = f"exited {ended}" if ended is not None else "timed out"
                pytest.fail(f"dag_runner.py serve {state} during {name}:\n{tail}")
            time.sleep(0.2)
        text = self._log_since(start)
        log_path.write_text(text, encoding="utf-8")
        answer = json.loads(out.read_text(encoding="utf-8"))
        if "error" in answer:
            tail = "\n".join(text.splitlines()[-60:])
            pytest.fail(f"{name}: {answer['error']}; end of {log_path}:\n{tail}")
        # What comes before the first run's mark is the end of earlier output.
        parts = re.split(rf"^{re.escape(RUN_MARK)}\d+: .*$", text, flags=re.MULTILINE)[1:]
        for run, part in zip(runs, parts, strict=True):
            (workdir / f"{run['name']}.log").write_text(part, encoding="utf-8")
        return answer["runs"]

    def _log_since(self, offset: int) -> str:
        with self.log_path.open("rb") as log:
            log.seek(offset)
            return log.read().decode("utf-8", errors="replace")

    def close(self) -> None:
        """Let the process end (its input closed), killing it if it does not."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
