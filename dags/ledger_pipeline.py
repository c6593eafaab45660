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
- `great_expectations_checkpoint` and `merkle_snapshot_check` run the *batch audit*: the
  batches committed since the last passing audit (`ledger_engine.audit.runner`), at a cost of
  those batches, not of the ledger. The first runs the batch suite of Great Expectations
  (`ledger_batch_integrity`: each rule of the whole-ledger suite over the batches in scope);
  the second the hash chain over the scope, the Merkle digests (they hash to the newest
  recorded roots, and less the scope's change log to the roots before the scope) and the
  scope's batch counts. Each publishes its checks and scope (XCom keys `audit_checks`,
  `audit_scope`) and fails, listing the failed checks, if any check fails.
- `write_audit_report` writes the HTML audit report under `LEDGER_REPORTS` from what the two
  audit tasks published (auditing again only for a task that died before it published), and
  records the batch audit's mark (`ledger_audit_marks`) when every check passed, so that the
  next run's audit starts after these batches.

The whole-ledger checks (every Merkle tree recomputed, the whole-ledger suite, the replay) are
the daily full audit's, `dags/ledger_replay.py`.

The audit tasks and the report run once everything before them is done, whatever its outcome
(trigger rule `all_done`): they check what *is* committed, so that every failure shows as a
task of its own and a person always gets a report with every finding. The report task is the
DAG's only leaf, and Airflow derives a run's state from its leaves, so it fails, after writing
the report, if any check failed or any task before it did not succeed: a run is green only
when the batches committed and every audit passed.

The audit tasks, the report task and the settings every ledger DAG shares come from
`ledger_engine.dags` (the daily full audit is made of the same); task bodies are a few lines
calling the platform (`ledger_engine.pipeline.dag_tasks`, `ledger_engine.audit.dag_tasks`),
imported lazily, so parsing this file stays fast: it reads only the settings
(`ledger_engine.config`), never Spark, Great Expectations or a database.
`max_active_runs=1`: two runs must never drive the same streaming checkpoint at once; the run
lease (`ledger_engine.store.lease`) also keeps a DAG run and a manual `ledger run` apart: the
later one waits up to `LEDGER_RUN_WAIT_SECONDS`, then fails saying which run holds the ledger.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from airflow.sdk import chain, task

from ledger_engine.config import Settings
from ledger_engine.dags import BATCH_AUDIT, audit_part, audit_report, ledger_dag

DAG_ID = "ledger_pipeline"
AUDIT_TIMEOUT = timedelta(minutes=30)  # each part audits the new batches, not the ledger

log = logging.getLogger(__name__)


@task(execution_timeout=timedelta(hours=1))
def run_micro_batches() -> dict[str, Any]:
    """Process every landed event file; each micro-batch commits exactly once."""
    from airflow.sdk import get_current_context

    from ledger_engine.pipeline.dag_tasks import micro_batches_task

    return micro_batches_task(get_current_context()["run_id"], DAG_ID, log)


@ledger_dag(
    DAG_ID,
    description="Spark micro-batches committed exactly once to PostgreSQL, then audited",
    schedule=Settings.from_env().pipeline_schedule,
    dagrun_timeout=timedelta(hours=2),
    tags=["ledger", "spark", "postgres", "audit"],
    doc_md=__doc__,
)
def ledger_pipeline() -> None:
    batches = run_micro_batches()
    expectations = audit_part("great_expectations", BATCH_AUDIT, AUDIT_TIMEOUT)
    snapshots = audit_part("merkle", BATCH_AUDIT, AUDIT_TIMEOUT)
    parts = {"merkle": snapshots, "great_expectations": expectations}
    chain(batches, expectations, snapshots, audit_report(BATCH_AUDIT, parts, pipeline=batches))


ledger_pipeline()
