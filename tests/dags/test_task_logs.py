"""Spark's start-up in a fresh process says nothing raw on stderr and nothing above INFO,
while Spark's own warnings still come through at their level.

Airflow shows a line a task writes straight to stderr as an ERROR whatever it says, so a
successful run's log must hold only log records: Spark's JVM, py4j and the embedded server
speak through Python's logging, at their own level. A pipeline run's task log is checked on
the pipeline DAG's own first run (`test_ledger_dag.py`); the JVM's start-up, which a test
session's shared Spark has done already, is checked here in a child Python.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

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
