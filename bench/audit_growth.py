"""Does a batch's audit cost follow the batch or the ledger's history? A measurement, not a test.

    .venv/bin/python -m bench.audit_growth [--batch 10000] [--histories 10000,200000]
                                           [--accounts 5000]

For each history size H: a fresh ledger gets H generated bank events through the pipeline
(`run_pipeline`, batches of `--history-batch` events), then the full audit (which leaves its
mark), then one batch of `--batch` events through the pipeline. On that ledger it times:

- the batch audit's two parts over that one batch, each the median of three runs: the Merkle
  and chain part (`batch_verify`) and the Great Expectations batch suite;
- the batch audit of that one batch whole (`run_audits`, as `ledger audit` and every pipeline
  run run it: both parts, the mark, the report);
- the batch audit again, now with nothing new in scope: the fixed cost (Great Expectations'
  checkpoint, context and Data Docs, the 4,096 digests per table, the report);
- the full audit (`ledger audit --full`: every Merkle tree recomputed, the whole-ledger suite).

The batch audit should cost about the same on every history; the full audit grows with it.
PostgreSQL is the server of `LEDGER_DATABASE_URL`, or an embedded one under
`var/bench-audit-growth`. Results go to `bench/results/audit-growth-<time>.json`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from sqlalchemy import Engine, text

from bench.run import RESULTS, database, server_url
from ledger_engine.apps.bank.generator import generate_events
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.audit.expectations.run import DEFAULT_PROJECT_ROOT
from ledger_engine.audit.findings import BATCHES
from ledger_engine.config import PROJECT_ROOT, Settings
from ledger_engine.core.stopwatch import Stopwatch
from ledger_engine.pipeline.event_inbox import write_event_files
from ledger_engine.store.database import connect
from ledger_engine.store.migrations import migrate
from ledger_engine.store.schema import apply_declared_schema
from ledger_engine.tasks.audit_runs import expectations_audit, merkle_audit, run_audits

WORK = PROJECT_ROOT / "var" / "bench-audit-growth"
EVENTS_PER_FILE = 1_000
REPEATS = 3  # runs of each part of the batch audit, timed by their median
console = Console()


def ledger_settings(url: str, data_dir: Path, batch_events: int, master: str) -> Settings:
    files = max(1, batch_events // EVENTS_PER_FILE)
    return Settings.from_env(
        {
            "LEDGER_DATABASE_URL": url,
            "LEDGER_DATA_DIR": str(data_dir),
            "LEDGER_FILES_PER_BATCH": str(files),
            "LEDGER_SPARK_MASTER": master,
        }
    )


def commit(settings: Settings, events: list, prefix: str, spark: Any, engine: Engine) -> float:
    """Land `events` and run the pipeline over them; the seconds it took."""
    from ledger_engine.pipeline.job import run_pipeline

    write_event_files(events, settings.inbox, events_per_file=EVENTS_PER_FILE, prefix=prefix)
    watch = Stopwatch()
    run_pipeline(settings, spark=spark, engine=engine)
    return watch.elapsed()


def analyze(engine: Engine) -> None:
    """Statistics for the history just committed, as autovacuum would have gathered them on a
    ledger that old: without them the full audit's plans take the log tables for nearly empty
    (one of its rules ran for over ten minutes on 10^6 events). The batch that follows is
    audited on the statistics it finds, as after any pipeline run."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("ANALYZE"))


def timed_audit(settings: Settings, engine: Engine, root: Path, full: bool) -> dict[str, Any]:
    """One audit through `run_audits`, with its seconds and scope."""
    watch = Stopwatch()
    report, _ = run_audits(settings, engine=engine, expectations_root=root, full=full)
    seconds = watch.elapsed()
    assert report.passed, [c for c in report.checks if not c.passed]
    scope = report.scope
    return {"seconds": seconds, "first_batch": scope.first_batch, "last_batch": scope.last_batch}


def timed_parts(settings: Settings, engine: Engine, root: Path) -> dict[str, float]:
    """The batch audit's two parts (no mark, no report), in seconds: the median of
    `REPEATS` runs each, the scope staying the same."""
    seconds: dict[str, list[float]] = {"merkle": [], "great_expectations": []}
    for _ in range(REPEATS):
        for name, part in (
            ("merkle", lambda: merkle_audit(settings, BATCHES, engine)),
            ("great_expectations", lambda: expectations_audit(settings, BATCHES, engine, root)),
        ):
            watch = Stopwatch()
            _, checks = part()
            seconds[name].append(watch.elapsed())
            assert all(c.passed for c in checks), checks
    return {name: statistics.median(values) for name, values in seconds.items()}


def measure(server: str, history: int, args: argparse.Namespace, spark: Any) -> dict[str, Any]:
    """Build a ledger of `history` events plus one batch; time the audits on it."""
    url = database(server, f"ledger_bench_growth_{history}")
    engine = connect(url)
    try:
        migrate(engine)
        apply_declared_schema(engine, build_ledger())
        data = WORK / f"data-{history}"
        shutil.rmtree(data, ignore_errors=True)
        root = WORK / "expectations"
        events = generate_events(history + args.batch, accounts=args.accounts, seed=history)
        settings = ledger_settings(url, data, args.history_batch, args.master)
        built = commit(settings, events[:history], "history", spark, engine)
        console.print(f"history of {history:,} events committed in {built:.0f} s")
        analyze(engine)
        timed_audit(settings, engine, root, full=True)  # proves the history: the full mark
        batch_settings = ledger_settings(url, data, args.batch, args.master)
        committed = commit(batch_settings, events[history:], "batch", spark, engine)
        parts = timed_parts(settings, engine, root)
        batch = timed_audit(settings, engine, root, full=False)
        nothing_new = timed_audit(settings, engine, root, full=False)
        full = timed_audit(settings, engine, root, full=True)
        with engine.connect() as conn:
            sizes = conn.execute(
                text(
                    "SELECT (SELECT count(*) FROM ledger_events) AS events,"
                    " (SELECT count(*) FROM ledger_change_log) AS changes,"
                    " (SELECT count(*) FROM accounts) + (SELECT count(*) FROM asset_ledger)"
                    " AS state_rows,"
                    " (SELECT commit_seconds FROM ledger_batches ORDER BY batch_id DESC LIMIT 1)"
                    " AS batch_commit_seconds"
                )
            ).one()
    finally:
        engine.dispose()
    return {
        "history_events": history,
        "batch_events": args.batch,
        "ledger": dict(sizes._mapping),
        "batch_pipeline_seconds": committed,
        "batch_audit": batch,
        "batch_audit_parts_seconds": parts,
        "batch_audit_nothing_new": nothing_new,
        "full_audit": full,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=10_000, help="events in the audited batch")
    parser.add_argument("--histories", default="10000,200000", help="history sizes, in events")
    parser.add_argument("--history-batch", type=int, default=50_000, help="events per batch")
    parser.add_argument("--accounts", type=int, default=5_000)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    from ledger_engine.runtime.spark.session import build_session

    WORK.mkdir(parents=True, exist_ok=True)
    root = WORK / "expectations"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(
        DEFAULT_PROJECT_ROOT / "gx", root / "gx", ignore=shutil.ignore_patterns("uncommitted")
    )
    server = server_url(WORK)
    spark = build_session(args.master, app_name="bench-audit-growth")
    try:
        figures = [measure(server, int(h), args, spark) for h in args.histories.split(",")]
    finally:
        spark.stop()

    table = Table(title=f"Audits of one batch of {args.batch:,} events, by history")
    for column in (
        "history events",
        "ledger events",
        "change-log rows",
        "batch audit s",
        "Merkle part s",
        "GX part s",
        "nothing new s",
        "full audit s",
        "batch commit s",
    ):
        table.add_column(column, justify="right")
    for f in figures:
        table.add_row(
            f"{f['history_events']:,}",
            f"{f['ledger']['events']:,}",
            f"{f['ledger']['changes']:,}",
            f"{f['batch_audit']['seconds']:.2f}",
            f"{f['batch_audit_parts_seconds']['merkle']:.2f}",
            f"{f['batch_audit_parts_seconds']['great_expectations']:.2f}",
            f"{f['batch_audit_nothing_new']['seconds']:.2f}",
            f"{f['full_audit']['seconds']:.2f}",
            f"{f['ledger']['batch_commit_seconds']:.2f}",
        )
    console.print(table)
    if len(figures) > 1:
        ratio = figures[-1]["batch_audit"]["seconds"] / figures[0]["batch_audit"]["seconds"]
        console.print(f"batch audit, largest history over smallest: {ratio:.2f}x")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"audit-growth-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
    out.write_text(json.dumps(figures, indent=2, default=str))
    console.print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
