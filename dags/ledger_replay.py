"""The ledger's daily full audit: every whole-ledger check of the system of record, on a schedule.

`ledger_replay` runs daily by default (`@daily`; set `LEDGER_REPLAY_SCHEDULE` in the environment
of the DAG processor to another cron expression or preset, or to `none` for manual runs only).
Like `ledger_pipeline` it needs no params or run conf: everything comes from the `LEDGER_*`
environment variables read by `ledger_engine.config.Settings.from_env()` inside the tasks.

    merkle_snapshot_check
      -> great_expectations_checkpoint
        -> replay_event_log
          -> write_audit_report

The pipeline's runs audit only the batches they committed (the batch audit); the checks whose
cost is the whole ledger run here (`ledger audit --full` runs the first two by hand):

- `merkle_snapshot_check` runs `ledger verify`: the whole batch hash chain, every table's
  Merkle tree recomputed inside PostgreSQL (down to the keys that differ) and every batch's
  counts;
- `great_expectations_checkpoint` runs the whole-ledger suite (`ledger_integrity`);
- `replay_event_log` re-executes the stored event log from an empty ledger with the serial
  runner (`ledger_engine.audit.replay.replay_checks`) and compares every table, the change log,
  results, rejections, duplicates, executed request ids and each event's outcome with
  PostgreSQL, logging its progress (`ledger verify --replay` runs the same by hand);
- `write_audit_report` writes one HTML audit report page under `LEDGER_REPORTS` with every
  check, records a full audit mark (`ledger_audit_marks`) when every check passed, and fails,
  listing the failed checks and their findings, if any failed.

Each audit task publishes its checks and fails when one of them fails; every task after the
first runs whatever happened before it (trigger rule `all_done`). The audits read and never
write (but for the mark), so a run may overlap a `ledger_pipeline` run: each part checks what
was committed when it started, and the mark claims only what every part covered. The task
bodies import `ledger_engine` lazily (`ledger_engine.audit.dag_tasks`), so parsing this file
stays fast.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pendulum
from airflow.sdk import TriggerRule, dag, task

from ledger_engine.config import Settings

DAG_ID = "ledger_replay"

log = logging.getLogger(__name__)


@dag(
    dag_id=DAG_ID,
    description="The daily full audit: Merkle trees, the whole-ledger suite, the replay",
    schedule=Settings.from_env().replay_schedule,
    start_date=pendulum.datetime(2025, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=timedelta(hours=12),
    default_args={"owner": "ledger", "retries": 0},
    tags=["ledger", "postgres", "audit", "replay"],
    doc_md=__doc__,
)
def ledger_replay() -> None:
    @task(execution_timeout=timedelta(hours=2))
    def merkle_snapshot_check() -> dict[str, Any]:
        """`ledger verify`: hash chain, Merkle trees recomputed in PostgreSQL, batch counts."""
        from ledger_engine.audit.dag_tasks import audit_part_task
        from ledger_engine.audit.findings import FULL

        return audit_part_task("merkle", FULL, log)

    @task(trigger_rule=TriggerRule.ALL_DONE, execution_timeout=timedelta(hours=2))
    def great_expectations_checkpoint() -> dict[str, Any]:
        """The whole-ledger Great Expectations suite."""
        from ledger_engine.audit.dag_tasks import audit_part_task
        from ledger_engine.audit.findings import FULL

        return audit_part_task("great_expectations", FULL, log)

    @task(trigger_rule=TriggerRule.ALL_DONE, execution_timeout=timedelta(hours=12))
    def replay_event_log() -> dict[str, Any]:
        """Replay the stored event log; fail on any difference."""
        from ledger_engine.audit.dag_tasks import audit_part_task
        from ledger_engine.audit.findings import FULL

        return audit_part_task("replay", FULL, log)

    @task(trigger_rule=TriggerRule.ALL_DONE, execution_timeout=timedelta(minutes=30))
    def write_audit_report(
        snapshots: dict[str, Any] | None,
        expectations: dict[str, Any] | None,
        replay: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """Write the HTML audit report and the full audit's mark if every check passed; fail
        if any check failed or any task before failed (each argument is a task's return
        value, `None` when it did not succeed)."""
        from ledger_engine.audit.dag_tasks import report_task
        from ledger_engine.audit.findings import FULL

        upstream = {
            "merkle_snapshot_check": snapshots,
            "great_expectations_checkpoint": expectations,
            "replay_event_log": replay,
        }
        parts = [
            ("merkle", "merkle_snapshot_check"),
            ("great_expectations", "great_expectations_checkpoint"),
            ("replay", "replay_event_log"),
        ]
        return report_task(FULL, parts, upstream, log)

    snapshots = merkle_snapshot_check()
    expectations = great_expectations_checkpoint()
    replay = replay_event_log()
    report = write_audit_report(snapshots, expectations, replay)
    snapshots >> expectations >> replay >> report


ledger_replay()
