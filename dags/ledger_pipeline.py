"""The ledger's Airflow DAG: micro-batches into PostgreSQL, then the audits, then the report.

`ledger_pipeline` runs when event files land, and whenever someone triggers it:

- *when event files land* (the default, `LEDGER_DAG_SCHEDULE=events`): the DAG is scheduled on
  the asset `ledger_events` (the event inbox, `LEDGER_INBOX`), whose watcher `events_landed` is
  an event trigger that Airflow's triggerer runs (`ledger_engine.pipeline.trigger.EventsLanded`):
  every `LEDGER_EVENT_POLL_SECONDS` (30) it lists the inbox and fires once for the `*.jsonl`
  files landed whole that no committed batch took, which updates the asset and starts a run.
  Nothing lands, nothing runs: no run pays Spark's start-up for nothing, and switching the DAG
  on starts no run by itself;
- *on a clock instead*: set `LEDGER_DAG_SCHEDULE`, in the environment of the DAG processor, to
  a cron expression or preset (`*/15 * * * *`, the schedule before the watcher): runs then come
  from that schedule only, and the triggerer watches nothing for this DAG;
- *by hand*: trigger it in the Airflow UI (`ledger run` runs the same micro-batches from a
  shell); `LEDGER_DAG_SCHEDULE=none` leaves only this.

It needs no params and no run conf: everything comes from the `LEDGER_*` environment variables
read by `ledger_engine.config.Settings.from_env()` inside each task.

    run_micro_batches
      -> great_expectations_checkpoint
        -> merkle_snapshot_check
          -> write_audit_report

- `run_micro_batches` processes every event file that has landed in the inbox (Spark
  Structured Streaming, availableNow) and commits each micro-batch exactly once. When it
  succeeds it updates the asset `ledger_batches` (its outlet; the event's extra is its summary,
  `batches` the number committed): DAGs that follow what the ledger committed schedule on it.
- `great_expectations_checkpoint` and `merkle_snapshot_check` run the *batch audit*: the
  batches committed since the last passing audit (`ledger_engine.tasks.audit_runs`), at a cost of
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
calling the platform (`ledger_engine.tasks.pipeline_dag`, `ledger_engine.tasks.audit_dag`),
imported lazily, so parsing this file stays fast: it reads only the settings
(`ledger_engine.config`) and the watcher's trigger class, never Spark, Great Expectations or a
database.
`max_active_runs=1`: two runs must never drive the same streaming checkpoint at once; the run
lease (`ledger_engine.store.lease`) also keeps a DAG run and a manual `ledger run` apart: the
later one waits up to `LEDGER_RUN_WAIT_SECONDS`, then fails saying which run holds the ledger.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from airflow.sdk import Asset, AssetWatcher, chain, get_current_context, task

from ledger_engine.config import ON_EVENTS, Settings
from ledger_engine.dags import BATCH_AUDIT, audit_part, audit_report, ledger_dag
from ledger_engine.pipeline.trigger import EventsLanded

DAG_ID = "ledger_pipeline"
AUDIT_TIMEOUT = timedelta(minutes=30)  # each part audits the new batches, not the ledger
SETTINGS = Settings.from_env()
EVENTS = Asset(
    name="ledger_events",
    uri=SETTINGS.inbox.as_uri(),
    watchers=[
        AssetWatcher(
            name="events_landed",
            trigger=EventsLanded(poll_seconds=SETTINGS.event_poll_seconds),
        )
    ],
)
# What the pipeline committed: updated by every run whose micro-batches succeeded.
BATCHES = Asset(name="ledger_batches")
SCHEDULE = EVENTS if SETTINGS.pipeline_schedule == ON_EVENTS else SETTINGS.pipeline_schedule

log = logging.getLogger(__name__)


@task(execution_timeout=timedelta(hours=1), outlets=[BATCHES])
def run_micro_batches() -> dict[str, Any]:
    """Process every landed event file; each micro-batch commits exactly once."""
    from ledger_engine.tasks.pipeline_dag import micro_batches_task

    context = get_current_context()
    summary = micro_batches_task(context["run_id"], DAG_ID, log)
    context["outlet_events"][BATCHES].extra = summary
    return summary


@ledger_dag(
    DAG_ID,
    description="Spark micro-batches committed exactly once to PostgreSQL, then audited",
    schedule=SCHEDULE,
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
