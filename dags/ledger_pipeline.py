"""The ledger's Airflow DAG: micro-batches into PostgreSQL, then the audits, then the report.

`ledger_pipeline` runs every 15 minutes by default (`*/15 * * * *`; set `LEDGER_DAG_SCHEDULE` in
the environment of the DAG processor to another cron expression or preset, or to `none` for
manual runs only). It needs no params and no run conf: everything comes from the `LEDGER_*`
environment variables read by `ledger_engine.config.Settings.from_env()` inside each task.

    run_micro_batches
      -> great_expectations_checkpoint
        -> merkle_snapshot_check
          -> write_audit_report

- `run_micro_batches` processes every event file that has landed in the inbox (Spark
  Structured Streaming, availableNow) and commits each micro-batch exactly once.
- `great_expectations_checkpoint` runs the Great Expectations suite over the system of record
  and fails, listing the failed checks, if any check fails.
- `merkle_snapshot_check` runs `ledger verify`: the batch hash chain, every table's Merkle
  tree recomputed inside PostgreSQL (down to the keys that differ) and the batch counts; it
  fails on any finding.
- `write_audit_report` writes the HTML audit report under `LEDGER_REPORTS` from the checks
  the two audit tasks published (XCom key `audit_checks`, every finding and link), auditing again
  only for a task that died before it published.

The audit tasks and the report run once everything before them is done, whatever its outcome
(trigger rule `all_done`): they check what *is* committed, so that every failure shows as a
task of its own and a person always gets a report with every finding. The report task is the
DAG's only leaf, and Airflow derives a run's state from its leaves, so it fails, after writing
the report, if any check failed or any task before it did not succeed: a run is green only
when the batches committed and every audit passed.

Task bodies are thin and import `ledger_engine` lazily, so parsing this file stays fast (no
Spark, Great Expectations or database import at parse time); the logic lives in
`ledger_engine`. `max_active_runs=1`: two runs must never drive the same streaming checkpoint
at once; the run lease (`ledger_engine.store.lease`) also keeps a DAG run and a manual
`ledger run` apart: the later one waits up to `LEDGER_RUN_WAIT_SECONDS`, then fails saying
which run holds the ledger.
"""

from __future__ import annotations

import logging
import os
from datetime import timedelta
from typing import Any

import pendulum
from airflow.sdk import TriggerRule, dag, task

DAG_ID = "ledger_pipeline"
DEFAULT_SCHEDULE = "*/15 * * * *"

log = logging.getLogger(__name__)


def _schedule() -> str | None:
    value = os.environ.get("LEDGER_DAG_SCHEDULE", "").strip()
    if not value:
        return DEFAULT_SCHEDULE
    return None if value.lower() == "none" else value


def _check_dicts(checks: list[Any]) -> list[dict[str, Any]]:
    """Audit checks as small JSON-able dicts (for XCom and the task log)."""
    return [
        {
            "suite": c.suite,
            "name": c.name,
            "passed": c.passed,
            "findings": list(c.findings[:3]),
        }
        for c in checks
    ]


# The XCom key under which each audit task publishes all its checks (with every finding and
# link), before it fails or succeeds: the report task shows them instead of auditing again.
# Not "checks": a task returning a dict also pushes each of its keys (`multiple_outputs` is
# inferred from the return annotation), and the summary's "checks" would overwrite it.
CHECKS_KEY = "audit_checks"


def _publish(checks: list[Any]) -> None:
    """Publish every check of this audit task for the report task."""
    from airflow.sdk import get_current_context

    published = [
        {
            "suite": c.suite,
            "name": c.name,
            "passed": c.passed,
            "findings": list(c.findings),
            "link": c.link,
        }
        for c in checks
    ]
    get_current_context()["ti"].xcom_push(key=CHECKS_KEY, value=published)


def _audit_summary(checks: list[Any]) -> dict[str, Any]:
    links = sorted({c.link for c in checks if c.link})
    return {
        "checks": len(checks),
        "passed": sum(1 for c in checks if c.passed),
        "failed": [c["name"] for c in _check_dicts(checks) if not c["passed"]],
        "links": links,
    }


@dag(
    dag_id=DAG_ID,
    description="Spark micro-batches committed exactly once to PostgreSQL, then audited",
    schedule=_schedule(),
    start_date=pendulum.datetime(2025, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=timedelta(hours=2),
    default_args={"owner": "ledger", "retries": 0},
    tags=["ledger", "spark", "postgres", "audit"],
    doc_md=__doc__,
)
def ledger_pipeline() -> None:
    @task(execution_timeout=timedelta(hours=1))
    def run_micro_batches() -> dict[str, Any]:
        """Process every landed event file; each micro-batch commits exactly once."""
        from airflow.sdk import get_current_context

        from ledger_engine.config import Settings
        from ledger_engine.pipeline import run_pipeline

        settings = Settings.from_env()
        log.info("inbox %s, Spark master %s", settings.inbox, settings.spark_master)
        # Named in the run lease, so that a `ledger run` started meanwhile says who holds it.
        holder = f"airflow {DAG_ID} {get_current_context()['run_id']}"

        def on_wait(current: Any, waited: float) -> None:
            log.info("waited %.0f s for %s", waited, current.describe() if current else "a run")

        report = run_pipeline(settings, holder=holder, on_wait=on_wait)
        summary = {
            "batches": sum(1 for b in report.batches if b.committed),
            "replayed_batches": sum(1 for b in report.batches if not b.committed),
            "ingested": report.total("ingested"),
            "applied": report.total("applied"),
            "rejected": report.total("rejected"),
            "duplicates": report.total("duplicates"),
            "wall_seconds": round(report.wall_seconds, 3),
        }
        log.info("micro-batches: %s", summary)
        return summary

    @task(trigger_rule=TriggerRule.ALL_DONE, execution_timeout=timedelta(minutes=30))
    def great_expectations_checkpoint() -> dict[str, Any]:
        """Run the Great Expectations checkpoint over the system of record."""
        from ledger_engine.audit.runner import expectation_checks, raise_on_failure
        from ledger_engine.config import Settings

        checks = expectation_checks(Settings.from_env())
        log.info("great expectations: %s", _check_dicts(checks))
        _publish(checks)
        raise_on_failure(checks)
        return _audit_summary(checks)

    @task(trigger_rule=TriggerRule.ALL_DONE, execution_timeout=timedelta(minutes=30))
    def merkle_snapshot_check() -> dict[str, Any]:
        """`ledger verify`: hash chain, Merkle trees recomputed in PostgreSQL, batch counts."""
        from ledger_engine.audit.runner import raise_on_failure, snapshot_checks
        from ledger_engine.config import Settings

        checks = snapshot_checks(Settings.from_env())
        log.info("merkle: %s", _check_dicts(checks))
        _publish(checks)
        raise_on_failure(checks)
        return _audit_summary(checks)

    @task(trigger_rule=TriggerRule.ALL_DONE, execution_timeout=timedelta(minutes=30))
    def write_audit_report(
        batches: dict[str, Any] | None,
        expectations: dict[str, Any] | None,
        snapshots: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """Write the HTML audit report; fail if any check failed or any task before failed.

        Each argument is the return value of a task before this one, `None` when that task
        did not succeed.
        """
        from airflow.sdk import get_current_context

        from ledger_engine.audit.findings import AuditReport, CheckResult
        from ledger_engine.audit.report import write_report
        from ledger_engine.audit.runner import expectation_checks, snapshot_checks
        from ledger_engine.config import Settings
        from ledger_engine.store.database import open_store

        upstream = {
            "run_micro_batches": batches,
            "great_expectations_checkpoint": expectations,
            "merkle_snapshot_check": snapshots,
        }
        not_succeeded = [task_id for task_id, output in upstream.items() if output is None]
        settings = Settings.from_env()
        engine = open_store(settings)
        # (suite, the task that ran the audit, the audit itself if it must run again here)
        audits = [
            ("merkle", "merkle_snapshot_check", snapshot_checks),
            ("great_expectations", "great_expectations_checkpoint", expectation_checks),
        ]
        ti = get_current_context()["ti"]
        report = AuditReport()
        if batches is None:  # say so on the page too: what is audited may miss landed events
            finding = "the task failed: see its log in Airflow; what did commit is audited below"
            report.checks.append(
                CheckResult("pipeline", "run_micro_batches committed the inbox", False, (finding,))
            )
        try:
            for suite, task_id, audit in audits:
                published = ti.xcom_pull(task_ids=task_id, key=CHECKS_KEY)
                if published is not None:
                    log.info("%s: %d checks as %s published them", suite, len(published), task_id)
                    report.checks.extend(
                        CheckResult(c["suite"], c["name"], c["passed"], tuple(c["findings"]),
                                    c["link"])
                        for c in published
                    )  # fmt: skip
                    continue
                # The task died before it published (killed, timed out): audit here instead.
                log.info("%s: %s published no checks; auditing again", suite, task_id)
                try:
                    report.checks.extend(audit(settings, engine))
                except Exception as exc:  # the report still shows the audits that could run
                    log.exception("the %s audit could not run", suite)
                    finding = f"{type(exc).__name__}: {exc}"
                    report.checks.append(CheckResult(suite, "the audit runs", False, (finding,)))
            page = write_report(engine, report, settings.reports)
        finally:
            engine.dispose()
        log.info("audit report: %s (index: %s)", page, page.parent / "index.html")

        failures = report.failures()
        if failures or not_succeeded:
            lines = [f"audit report: {page}"]
            lines += [f"task did not succeed: {task_id}" for task_id in not_succeeded]
            lines += [f"check failed: {c.suite}: {c.name}" for c in failures]
            raise RuntimeError("the ledger run is not clean:\n" + "\n".join(lines))
        return {
            "report": str(page),
            "index": str(page.parent / "index.html"),
            "checks": len(report.checks),
            "passed": report.passed,
        }

    batches = run_micro_batches()
    expectations = great_expectations_checkpoint()
    snapshots = merkle_snapshot_check()
    report = write_audit_report(batches, expectations, snapshots)
    batches >> expectations >> snapshots >> report


ledger_pipeline()
