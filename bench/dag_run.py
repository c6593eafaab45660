"""One `ledger_pipeline` DAG run end to end, timed: what a person waits for after events land.

    .venv/bin/python -m bench.dag_run [--events 5000] [--runs 3]

Each run starts from nothing: a fresh ledger database, an Airflow home of its own (SQLite
metadata, migrated before the clock starts), `--events` of the bank's sample events landed in a
fresh inbox (`ledger generate`: files of 1,000 events). Then, in a process of its own as a
worker would start it, `dag.test()` runs the whole DAG: the micro-batches, both batch audits and
the report. The clock runs from that process's start to its end, imports and DAG parsing
included.

Printed per run, and the median over the runs: the end-to-end seconds, each task's seconds (as
Airflow recorded them), and inside `run_micro_batches` where its time went: the Spark session's
start, each micro-batch (`BatchSummary.describe()`), and the rest (the streaming query's start
and stop, the run lease, opening the store). PostgreSQL is the server of `LEDGER_DATABASE_URL`,
or the embedded one.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from bench.databases import create_database, drop_database
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.config import PROJECT_ROOT
from ledger_engine.core.stopwatch import Stopwatch
from ledger_engine.store.database import ledger_url
from ledger_engine.store.embedded import start_embedded, to_sqlalchemy_url

DAG_ID = "ledger_pipeline"
# A progress line's seconds: "micro-batch 3: 500 events, ... in 1.20 s, 417 events/s".
BATCH_SECONDS = re.compile(r" in ([0-9.]+) s")
TASKS = (
    "run_micro_batches",
    "great_expectations_checkpoint",
    "merkle_snapshot_check",
    "write_audit_report",
)


def server_url(work: Path) -> str:
    """The PostgreSQL server to measure on: `LEDGER_DATABASE_URL`'s, else an embedded one."""
    external = os.environ.get("LEDGER_DATABASE_URL")
    if external:
        return to_sqlalchemy_url(external)
    return start_embedded(work / "pgdata", keep_running=True)


def run_environment(work: Path, database_url: str) -> dict[str, str]:
    """An Airflow home of its own and a ledger of its own, as a DAG run's worker sees them."""
    inherited = {
        k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "LEDGER_", "_AIRFLOW"))
    }
    home = work / "airflow"
    return inherited | {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(PROJECT_ROOT / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "LEDGER_DATABASE_URL": database_url,
        "LEDGER_INBOX": str(work / "inbox"),
        "LEDGER_CHECKPOINT": str(work / "checkpoint"),
        "LEDGER_REPORTS": str(work / "reports"),
        "PYSPARK_PYTHON": sys.executable,
    }


def one_run(server: str, events: int, work: Path) -> dict[str, Any]:
    """Set up a fresh ledger and Airflow home, land `events`, and time one DAG run."""
    name = f"bench_dag_run_{uuid.uuid4().hex[:10]}"
    url = ledger_url(create_database(server, name), build_ledger())
    try:
        env = run_environment(work, url)
        ledger_bin = str(Path(sys.executable).with_name("ledger"))
        airflow_bin = str(Path(sys.executable).with_name("airflow"))
        subprocess.run([airflow_bin, "db", "migrate"], env=env, check=True, capture_output=True)
        if events > 0:  # none: a run with nothing landed (a person's trigger, say)
            subprocess.run(
                [ledger_bin, "generate", "--events", str(events)],
                env=env,
                check=True,
                capture_output=True,
            )
        out = work / "run.json"
        watch = Stopwatch()
        with (work / "run.log").open("w") as log:
            subprocess.run(
                [sys.executable, "-m", "bench.dag_run", "--child", str(out)],
                env=env,
                cwd=PROJECT_ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                check=True,
            )
        result = json.loads(out.read_text())
        result["end_to_end_seconds"] = watch.elapsed()
        return result
    finally:
        drop_database(server, name)


def child(out: Path) -> None:
    """Inside the run's process: the DAG run, its tasks' seconds and the micro-batch task's
    summary (its XCom: batches, wall and Spark session seconds)."""
    watch = Stopwatch()
    from airflow.models import DagBag
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    watch.lap("import")
    dag = DagBag(dag_folder=str(PROJECT_ROOT / "dags")).dags[DAG_ID]
    watch.lap("parse")
    dag_run = dag.test()
    with create_session() as session:
        tis = dag_run.get_task_instances(session=session)
        xcom = session.scalars(
            XComModel.get_many(
                run_id=dag_run.run_id,
                dag_ids=DAG_ID,
                task_ids="run_micro_batches",
                key="return_value",
            )
        ).first()
        result = {
            "state": str(dag_run.get_state()),
            "import_seconds": watch.seconds["import"],
            "parse_seconds": watch.seconds["parse"],
            "tasks": {ti.task_id: {"state": str(ti.state), "seconds": ti.duration} for ti in tis},
            "micro_batches": XComModel.deserialize_value(xcom) if xcom is not None else {},
        }
    out.write_text(json.dumps(result, default=str))


def _print_run(i: int, run: dict[str, Any], log: Path) -> None:
    print(f"run {i}: {run['state']}, {run['end_to_end_seconds']:.1f} s end to end")
    print(f"  imports {run['import_seconds']:.1f} s, DAG parse {run['parse_seconds']:.1f} s")
    for task in TASKS:
        info = run["tasks"].get(task, {})
        print(f"  {task:30s} {info.get('seconds') or 0:6.1f} s  {info.get('state')}")
    summary = run["micro_batches"]
    # The task's progress lines, one per micro-batch.
    lines = [
        line for line in log.read_text(errors="replace").splitlines() if "micro-batch " in line
    ]
    batch_seconds = sum(float(m.group(1)) for m in map(BATCH_SECONDS.search, lines) if m)
    session = summary.get("spark_session_seconds", 0.0)
    wall = summary.get("wall_seconds", 0.0)
    print(f"    run_pipeline {wall:.1f} s: Spark session start {session:.1f} s")
    for line in lines:
        print(f"      {line[line.index('micro-batch ') :]}")
    print(
        "      the rest (store, lease, streaming query start and stop): "
        f"{wall - session - batch_seconds:.1f} s"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        child(args.child)
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-dag-run-") as scratch:
        server = server_url(Path(scratch))
        runs = []
        for i in range(1, args.runs + 1):
            print(f"run {i} of {args.runs}: {args.events} events ...", flush=True)
            work = Path(scratch) / f"run-{i}"
            work.mkdir()
            run = one_run(server, args.events, work)
            _print_run(i, run, work / "run.log")
            if run["state"] != "success":
                errors = [
                    line
                    for line in (work / "run.log").read_text(errors="replace").splitlines()
                    if "error" in line.lower()
                ]
                print("\n".join(errors[-30:]), file=sys.stderr)
            runs.append(run)
        if len(runs) > 1:
            median = statistics.median(r["end_to_end_seconds"] for r in runs)
            spark = statistics.median(
                r["micro_batches"].get("spark_session_seconds", 0.0) for r in runs
            )
            print(
                f"median of {len(runs)}: {median:.1f} s end to end; "
                f"Spark session start {spark:.1f} s"
            )
        if not all(r["state"] == "success" for r in runs):
            print("a run did not succeed (its log's errors are above)", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
