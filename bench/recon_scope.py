"""Does reconciling an account's first statement cost its own movements or the ledger's history?
A measurement, not a test.

    .venv/bin/python -m bench.recon_scope [--history 1000000] [--batch 100000]
                                          [--accounts 100000] [--master local[2]]

A fresh ledger gets `--history` deposits through the pipeline (`run_pipeline`, batches of
`--batch` events) over `--accounts` accounts, three of them to bob (in the first, the middle
and the last batch). A source that names rows by the ledger's keys is reconciled once on an
empty inbox (the daily run before any statement), statistics are gathered as autovacuum would,
then bob's first statement (his three deposits) lands and is loaded. Timed on that ledger:

- the scope of the source's next run (`read_scope`, which reads bob's movements from the
  start), the median of three, with the ledger's rows it read (`pg_stat_xact_user_tables`:
  scans, rows scanned, rows fetched by index, of the change log and the event log);
- the run that reconciles the statement (`reconcile` with the reference matcher: the scope,
  matching, and recording the matches);
- for scale, one read of every change of the `accounts` table: what a scope reading the
  history would at least cost.

PostgreSQL is the server of `LEDGER_DATABASE_URL`, or an embedded one under
`var/bench-recon-scope`. Results go to `bench/results/recon-scope-<time>.json`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from datetime import UTC, datetime

from rich.console import Console
from sqlalchemy import text

from bench.run import RESULTS, database, server_url
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.config import PROJECT_ROOT, Settings
from ledger_engine.core.records import Event
from ledger_engine.core.stopwatch import Stopwatch
from ledger_engine.pipeline.event_inbox import write_event_files
from ledger_engine.reconcile.matching.reference import match
from ledger_engine.reconcile.rules import AmountCriterion, Rule
from ledger_engine.reconcile.run import reconcile
from ledger_engine.reconcile.sources import CsvLayout, Source, Sources
from ledger_engine.reconcile.statement_inbox import land_statement, load_statements
from ledger_engine.reconcile.storage.runs import Start, scope_in
from ledger_engine.store.database import connect
from ledger_engine.store.migrations import migrate
from ledger_engine.store.schema import apply_declared_schema

WORK = PROJECT_ROOT / "var" / "bench-recon-scope"
EVENTS_PER_FILE = 10_000
REPEATS = 3
READ = ("ledger_change_log", "ledger_events")
SOURCE = Source(
    "bank",
    "csv",
    "accounts",
    "EUR",
    2,
    csv=CsvLayout(
        {"booking_date": "Date", "amount": "Amount", "reference": "Ref", "account": "Acct"}
    ),
    rules=(Rule("exact", 0, amount=AmountCriterion(0), window_days=0, reference_similarity=1.0),),
)
SOURCES = Sources({SOURCE.name: SOURCE}, digest="bench" + "0" * 59)
console = Console()


def deposits(history: int, accounts: int, batch: int) -> list[Event]:
    """`history` deposits over `accounts` accounts, bob's three among them."""
    bob = {0, (history // batch // 2) * batch, history - 1}  # first, middle, last batch
    return [
        Event(
            "deposits",
            f"d{n}",
            {
                "account_id": "bob" if n in bob else f"acct-{n % accounts:06d}",
                "asset_id": "cash",
                "amount": 100 + n % 1_000,
                "asset_amount": 1,
                "reference": f"R{n}",
                "value_date": "2026-11-02",
            },
        )
        for n in range(history)
    ]


def table_reads(cursor) -> dict[str, list[int]]:
    cursor.execute(
        "SELECT relname, seq_scan, seq_tup_read, coalesce(idx_tup_fetch, 0)"
        " FROM pg_stat_xact_user_tables WHERE relname = ANY(%s)",
        (list(READ),),
    )
    return {name: counts for name, *counts in cursor.fetchall()}


def timed_scope(engine) -> tuple[float, dict[str, list[int]], int]:
    """One read of the source's scope: seconds, the ledger's rows read, movements found."""
    with engine.begin() as conn:
        cursor = conn.connection.cursor()
        before = table_reads(cursor)
        watch = Stopwatch()
        scope = scope_in(cursor, SOURCE.name, SOURCE.table, None, Start())
        seconds = watch.elapsed()
        after = table_reads(cursor)
    read = {t: [a - b for a, b in zip(after[t], before[t], strict=True)] for t in READ}
    return seconds, read, len(scope.ledger_items)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=int, default=1_000_000, help="deposits committed")
    parser.add_argument("--batch", type=int, default=100_000, help="events per batch")
    parser.add_argument("--accounts", type=int, default=100_000)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    from ledger_engine.pipeline.job import run_pipeline

    shutil.rmtree(WORK / "data", ignore_errors=True)
    WORK.mkdir(parents=True, exist_ok=True)
    url = database(server_url(WORK), "ledger_bench_recon_scope")
    engine = connect(url)
    try:
        migrate(engine)
        apply_declared_schema(engine, build_ledger())
        settings = Settings.from_env(
            {
                "LEDGER_DATABASE_URL": url,
                "LEDGER_DATA_DIR": str(WORK / "data"),
                "LEDGER_FILES_PER_BATCH": str(max(1, args.batch // EVENTS_PER_FILE)),
                "LEDGER_SPARK_MASTER": args.master,
            }
        )
        events = deposits(args.history, args.accounts, args.batch)
        write_event_files(events, settings.inbox, events_per_file=EVENTS_PER_FILE, prefix="h")
        watch = Stopwatch()
        run_pipeline(settings, engine=engine)
        console.print(f"{args.history:,} deposits committed in {watch.elapsed():.0f} s")
        statements = WORK / "data" / "statements"
        reconcile(engine, SOURCES, statements, match, who="bench")  # an empty inbox
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("ANALYZE"))
        entries = [e for e in events if e.payload["account_id"] == "bob"]
        lines = ["Date,Amount,Ref,Acct"] + [
            f"2026-11-02,{e.payload['amount'] // 100}.{e.payload['amount'] % 100:02d},"
            f"{e.payload['reference']},bob"
            for e in entries
        ]
        land_statement(statements, SOURCE, "bob-1.csv", ("\n".join(lines) + "\n").encode())
        load_statements(engine, SOURCES, statements)
        scopes = [timed_scope(engine) for _ in range(REPEATS)]
        watch = Stopwatch()
        (part,) = reconcile(engine, SOURCES, statements, match, who="bench").sources
        run_seconds = watch.elapsed()
        with engine.connect() as conn:
            watch = Stopwatch()
            history_changes = conn.execute(
                text(
                    "SELECT count(*), sum(coalesce((after #>> '{}')::bigint, 0))"
                    " FROM ledger_change_log WHERE table_name = 'accounts'"
                )
            ).one()[0]
            scan_seconds = watch.elapsed()
            changes = conn.execute(text("SELECT count(*) FROM ledger_change_log")).scalar_one()
    finally:
        engine.dispose()
    figures = {
        "history_deposits": args.history,
        "change_log_rows": changes,
        "accounts_changes": history_changes,
        "scope_seconds_median": statistics.median(s for s, _, _ in scopes),
        "scope_rows_read": scopes[0][1],
        "scope_movements": scopes[0][2],
        "run_seconds": run_seconds,
        "run_matches": len(part.outcome.matches),
        "run_breaks": len(part.outcome.breaks),
        "accounts_changes_read_seconds": scan_seconds,
    }
    console.print(figures)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"recon-scope-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
    out.write_text(json.dumps(figures, indent=2))
    console.print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
