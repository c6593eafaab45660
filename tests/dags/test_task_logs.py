"""What a pipeline run's task log shows: one progress line per micro-batch and no error when
nothing failed.

Airflow shows a line a task writes straight to stderr as an ERROR whatever it says, so a
successful run's log must hold only log records: Spark's JVM, py4j and the embedded server
speak through Python's logging, at their own level. `dag.test()` runs the tasks in its own
process, where a raw line appears unstructured in the run's log; in a scheduler's worker it
would be one of Airflow's ERROR lines.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ledger_engine.apps.bank.generator import generate_events
from ledger_engine.pipeline.inbox import write_event_files
from tests.dags.conftest import Runner

# A structured record of Airflow's log: `<timestamp> [<level>   ] <message> ...`.
RECORD = re.compile(r"^\d{4}-\d\d-\d\dT\S+ \[(\w+)\s*\] (.*)$")
PROGRESS = re.compile(
    r"micro-batch (\d+): (\d+) events, (\d+) applied, (\d+) rejected, (\d+) duplicates "
    r"in [\d.]+ s, \d+ events/s"
)
TASK = "run_micro_batches"


@pytest.fixture(scope="module")
def task_log(
    dag_runner: Runner,
    airflow_env: dict[str, str],
    ledger_database_url: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[dict[str, Any], list[str]]:
    """A whole `ledger_pipeline` run over a small landed workload (two micro-batches): its
    result and the lines its micro-batch task logged."""
    workdir = tmp_path_factory.mktemp("task_logs")
    data_dir = workdir / "ledger"
    write_event_files(
        generate_events(200, accounts=20, seed=5), data_dir / "inbox", events_per_file=100
    )
    env = airflow_env | {
        "LEDGER_DATABASE_URL": ledger_database_url,
        "LEDGER_DATA_DIR": str(data_dir),
        "LEDGER_SPARK_MASTER": "local[1]",
        "LEDGER_FILES_PER_BATCH": "1",
    }
    result = dag_runner("test", env, workdir, "run")
    lines = (workdir / "run.log").read_text(encoding="utf-8", errors="replace").splitlines()
    start = next(i for i, line in enumerate(lines) if f"starting task_id={TASK}" in line)
    end = next(i for i, line in enumerate(lines) if f"end task task_id={TASK}" in line)
    return result, lines[start : end + 1]


def test_a_successful_run_logs_no_error_and_no_raw_output(
    task_log: tuple[dict[str, Any], list[str]],
) -> None:
    result, lines = task_log
    assert result["task_states"][TASK] == "success"
    raw = [line for line in lines if not RECORD.match(line)]
    assert raw == [], "lines written straight to stdout or stderr"
    errors = [line for line in lines if RECORD.match(line).group(1) in ("error", "critical")]
    assert errors == []


def test_the_task_logs_one_progress_line_per_micro_batch(
    task_log: tuple[dict[str, Any], list[str]],
) -> None:
    result, lines = task_log
    progress = [m for line in lines if (m := PROGRESS.search(line))]
    summary = result["xcom"][TASK]
    assert [int(m.group(1)) for m in progress] == list(range(summary["batches"]))
    assert summary["batches"] == 2
    totals = [sum(int(m.group(i)) for m in progress) for i in (2, 3, 4, 5)]
    assert totals == [
        summary["ingested"],
        summary["applied"],
        summary["rejected"],
        summary["duplicates"],
    ]


# A child Python starting the engine's session: every log record on stdout, stderr left for
# whatever the JVM (or anything else) writes raw. A Spark logger's warning shows that Spark's
# warnings still come through, at their level.
SESSION_START = """
import logging, sys
FORMAT = "%(levelname)s %(name)s %(message)s"
logging.basicConfig(level=logging.DEBUG, stream=sys.stdout, format=FORMAT)
from ledger_engine.runtime.spark.session import build_session
spark = build_session("local[1]", app_name="start-up", driver_memory="512m")
spark.range(3).count()
spark._jvm.org.slf4j.LoggerFactory.getLogger("probe").warn("a Spark warning")
spark.stop()
"""


@pytest.fixture(scope="module")
def session_start_up(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", SESSION_START],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )


def test_spark_start_up_writes_nothing_raw_to_stderr(
    session_start_up: subprocess.CompletedProcess,
) -> None:
    assert session_start_up.stderr == ""


def test_spark_start_up_logs_nothing_above_info_and_warnings_still_come_through(
    session_start_up: subprocess.CompletedProcess,
) -> None:
    records = session_start_up.stdout.splitlines()
    loud = [r for r in records if r.split(" ", 1)[0] in ("WARNING", "ERROR", "CRITICAL")]
    assert loud == ["WARNING ledger_engine.spark probe: a Spark warning"]
