"""The ledger's daily full audit: every whole-ledger check of the system of record, on a schedule.

`ledger_replay` runs daily by default (`@daily`; set `LEDGER_REPLAY_SCHEDULE` in the environment
of the DAG processor to another cron expression or preset, or to `none` for manual runs only).
Switched on, it waits for the schedule's next tick (midnight UTC): it never runs at once for a
tick that passed while it was off (`ledger_engine.dags.on_clock`).
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
  runner (`ledger_engine.audit.rederivation.replay.replay_checks`) and compares every table,
  the change log, results, rejections, duplicates, executed request ids and each event's
  outcome with PostgreSQL, logging its progress (`ledger verify --replay` runs the same by hand);
- `write_audit_report` writes one HTML audit report page under `LEDGER_REPORTS` with every
  check, records a full audit mark (`ledger_audit_marks`) when every check passed, and fails,
  listing the failed checks and their findings, if any failed.

Each audit task publishes its checks and fails when one of them fails; every task after the
first runs whatever happened before it (trigger rule `all_done`). The audits read and never
write (but for the mark), so a run may overlap a `ledger_pipeline` run: each part checks what
was committed when it started, and the mark claims only what every part covered. The tasks
come from `ledger_engine.dags`, as `ledger_pipeline`'s audit does; their bodies import the
platform lazily (`ledger_engine.tasks.audit_dag`), so parsing this file stays fast.
"""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import chain

from ledger_engine.config import Settings
from ledger_engine.dags import FULL_AUDIT, audit_part, audit_report, ledger_dag

DAG_ID = "ledger_replay"
AUDIT_TIMEOUT = timedelta(hours=2)  # each of the first two parts reads the whole ledger
REPLAY_TIMEOUT = timedelta(hours=12)  # the replay re-executes every event ever committed


@ledger_dag(
    DAG_ID,
    description="The daily full audit: Merkle trees, the whole-ledger suite, the replay",
    schedule=Settings.from_env().replay_schedule,
    dagrun_timeout=timedelta(hours=12),
    tags=["ledger", "postgres", "audit", "replay"],
    doc_md=__doc__,
)
def ledger_replay() -> None:
    snapshots = audit_part("merkle", FULL_AUDIT, AUDIT_TIMEOUT)
    expectations = audit_part("great_expectations", FULL_AUDIT, AUDIT_TIMEOUT)
    replay = audit_part("replay", FULL_AUDIT, REPLAY_TIMEOUT)
    parts = {"merkle": snapshots, "great_expectations": expectations, "replay": replay}
    chain(snapshots, expectations, replay, audit_report(FULL_AUDIT, parts))


ledger_replay()
