"""How long the audits take on a large demo ledger, measured side by side in one run.

    .venv/bin/python -m bench.audits [--accounts 500000] [--events 600000] [--reuse]

Builds a demo ledger with the pipeline (`ledger generate` + `ledger run`, 100 files of 1,000
events per micro-batch): the first `--accounts` events are opening deposits, one account row
and one asset row each, so 500,000 accounts make a ledger of 10^6 rows; the rest are transfers,
lookups, deposits, faulty events and retries. Then it times, on that ledger:

- `ledger verify` (hash chain, Merkle trees recomputed inside PostgreSQL, batch counts);
- the replay of the whole stored event log (`ledger verify --replay`'s re-derivation);
- the Great Expectations checkpoint;
- writing the HTML audit report.

PostgreSQL is the server of `LEDGER_DATABASE_URL`, or an embedded one under `var/bench-audits`.
With `--reuse`, a ledger built by an earlier run (database `ledger_bench_audits`) is measured
again without being rebuilt. Results go to `bench/results/audits-<time>.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.table import Table
from sqlalchemy import text

from bench.run import RESULTS, database, server_url
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.config import PROJECT_ROOT
from ledger_engine.core.stopwatch import Stopwatch
from ledger_engine.store.database import connect

DATABASE = "ledger_bench_audits"
WORK = PROJECT_ROOT / "var" / "bench-audits"
console = Console()


def build(url: str, args: argparse.Namespace) -> float:
    """Fill the ledger at `url` through the pipeline; return the seconds it took."""
    shutil.rmtree(WORK / "data", ignore_errors=True)
    env = {
        **os.environ,
        "LEDGER_DATABASE_URL": url,
        "LEDGER_DATA_DIR": str(WORK / "data"),
        "LEDGER_FILES_PER_BATCH": "100",
        "LEDGER_SPARK_MASTER": args.master,
    }
    watch = Stopwatch()
    for command in (
        ["generate", "--events", str(args.events), "--accounts", str(args.accounts),
         "--seed", "11", "--tag", "bench"],
        ["run"],
    ):  # fmt: skip
        subprocess.run([sys.executable, "-m", "ledger_engine.cli", *command], env=env, check=True)
    return watch.elapsed()


def sizes(url: str) -> dict[str, int]:
    engine = connect(url)
    try:
        with engine.connect() as conn:
            return {
                name: conn.execute(text(query)).scalar_one()
                for name, query in (
                    ("batches", "SELECT count(*) FROM ledger_batches"),
                    ("events", "SELECT count(*) FROM ledger_events"),
                    ("change log rows", "SELECT count(*) FROM ledger_change_log"),
                    ("accounts rows", "SELECT count(*) FROM accounts"),
                    ("asset_ledger rows", "SELECT count(*) FROM asset_ledger"),
                )
            }
    finally:
        engine.dispose()


def measure(url: str) -> dict[str, Any]:
    """Seconds of each audit on the ledger at `url`, and whether it passed."""
    from ledger_engine.audit.expectations.run import run_expectations
    from ledger_engine.audit.findings import AuditReport
    from ledger_engine.audit.proof.verify import verify_ledger
    from ledger_engine.audit.rederivation.replay import replay_checks
    from ledger_engine.report import write_report

    ledger = build_ledger()
    engine = connect(url)
    watch = Stopwatch()
    figures: dict[str, Any] = {}
    checks = []
    try:
        for label, action in (
            ("ledger verify", lambda: verify_ledger(engine, ledger)),
            ("replay of the event log", lambda: replay_checks(engine, ledger)),
            ("Great Expectations", lambda: run_expectations(url, ledger, WORK / "expectations")),
        ):
            with console.status(f"measuring {label}"), watch.timed(label):
                found = action()
            checks += found
            figures[label] = {
                "seconds": watch.seconds[label],
                "passed": all(c.passed for c in found),
            }
        with console.status("measuring audit report"), watch.timed("audit report"):
            write_report(engine, AuditReport(checks), WORK / "reports")
        figures["audit report"] = {"seconds": watch.seconds["audit report"], "passed": True}
    finally:
        engine.dispose()
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accounts", type=int, default=500_000)
    parser.add_argument("--events", type=int, default=600_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--reuse", action="store_true", help="measure the last built ledger")
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    server = server_url(WORK)
    if args.reuse:
        from sqlalchemy import make_url

        from ledger_engine.store.database import ledger_url

        url = make_url(server).set(database=DATABASE).render_as_string(hide_password=False)
        url = ledger_url(url, build_ledger())
        build_seconds = None
    else:
        url = database(server, DATABASE)
        build_seconds = build(url, args)
    counts = sizes(url)
    figures = measure(url)

    state_rows = counts["accounts rows"] + counts["asset_ledger rows"]
    table = Table(title=f"Audits on a ledger of {state_rows:,} rows")
    table.add_column("audit")
    table.add_column("seconds", justify="right")
    table.add_column("rows or events per second", justify="right")
    table.add_column("passed")
    per = {"ledger verify": state_rows, "replay of the event log": counts["events"]}
    for label, figure in figures.items():
        rate = f"{per[label] / figure['seconds']:,.0f}" if label in per else ""
        table.add_row(label, f"{figure['seconds']:.2f}", rate, str(figure["passed"]))
    console.print(table)
    console.print(", ".join(f"{name}: {count:,}" for name, count in counts.items()))
    if build_seconds is not None:
        console.print(f"built by the pipeline in {build_seconds:.0f} s")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"audits-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
    out.write_text(
        json.dumps({"sizes": counts, "build_seconds": build_seconds, "audits": figures}, indent=2)
    )
    console.print(f"results: {out}")
    return 0 if all(f["passed"] for f in figures.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
