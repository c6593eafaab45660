"""The ledger's replay DAG: the full re-derivation of the system of record, on a schedule.

`ledger_replay` runs daily by default (`@daily`; set `LEDGER_REPLAY_SCHEDULE` in the environment
of the DAG processor to another cron expression or preset, or to `none` for manual runs only).
Like `ledger_pipeline` it needs no params or run conf: everything comes from the `LEDGER_*`
environment variables read by `ledger_engine.config.Settings.from_env()` inside the task.

    replay_event_log

`replay_event_log` re-executes the stored event log from an empty ledger with the serial runner
(`ledger_engine.audit.replay.replay_checks`) and compares every table, the change log, results,
rejections, duplicates, executed request ids and each event's outcome with PostgreSQL. It logs
its progress, writes an HTML audit report page under `LEDGER_REPORTS` (also when the replay
could not run), and fails, listing the findings, if any check failed. `ledger verify --replay`
runs the same by hand.

The replay reads one snapshot and never writes, so it may overlap a `ledger_pipeline` run: it
checks what was committed when it started. The task body imports `ledger_engine` lazily, so
parsing this file stays fast.
"""

from __future__ import annotations

import logging
import os
import time
from datetime import timedelta
from typing import Any

import pendulum
from airflow.sdk import dag, task

DAG_ID = "ledger_replay"
DEFAULT_SCHEDULE = "@daily"
PROGRESS_EVERY_SECONDS = 30.0  # how often the task logs the replay's progress

log = logging.getLogger(__name__)


def _schedule() -> str | None:
    value = os.environ.get("LEDGER_REPLAY_SCHEDULE", "").strip()
    if not value:
        return DEFAULT_SCHEDULE
    return None if value.lower() == "none" else value


@dag(
    dag_id=DAG_ID,
    description="The stored event log re-executed by the serial runner, compared with PostgreSQL",
    schedule=_schedule(),
    start_date=pendulum.datetime(2025, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=timedelta(hours=12),
    default_args={"owner": "ledger", "retries": 0},
    tags=["ledger", "postgres", "audit", "replay"],
    doc_md=__doc__,
)
def ledger_replay() -> None:
    @task(execution_timeout=timedelta(hours=12))
    def replay_event_log() -> dict[str, Any]:
        """Replay the stored event log; write the audit report; fail on any difference."""
        from ledger_engine.apps import load_ledger
        from ledger_engine.audit.findings import AuditReport, CheckResult
        from ledger_engine.audit.replay import ReplayProgress, replay_checks
        from ledger_engine.audit.report import write_report
        from ledger_engine.config import Settings
        from ledger_engine.store.database import open_store

        settings = Settings.from_env()
        engine = open_store(settings)
        last_logged = [0.0]

        def on_progress(progress: ReplayProgress) -> None:
            now = time.monotonic()
            if progress.phase == "events" and now - last_logged[0] < PROGRESS_EVERY_SECONDS:
                return
            last_logged[0] = now
            log.info("%s", progress.describe())

        try:
            try:
                checks = replay_checks(engine, load_ledger(settings.app), on_progress)
            except Exception as exc:  # the report still says that the replay could not run
                log.exception("the replay could not run")
                finding = f"{type(exc).__name__}: {exc}"
                checks = [CheckResult("replay", "the replay runs", False, (finding,))]
            page = write_report(engine, AuditReport(checks), settings.reports)
        finally:
            engine.dispose()
        log.info("audit report: %s (index: %s)", page, page.parent / "index.html")

        failures = [c for c in checks if not c.passed]
        for check in checks:
            log.info("%s: %s", check.name, "passed" if check.passed else "FAILED")
        if failures:
            lines = [f"audit report: {page}"]
            for check in failures:
                lines.append(f"check failed: {check.suite}: {check.name}")
                lines.extend(f"  {finding}" for finding in check.findings)
            raise RuntimeError("the replay differs from the system of record:\n" + "\n".join(lines))
        return {
            "report": str(page),
            "checks": len(checks),
            "passed": sum(1 for c in checks if c.passed),
        }

    replay_event_log()


ledger_replay()
