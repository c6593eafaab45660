"""What the ledger's Airflow DAGs are made of: their shared settings (`ledger_dag`), an
audit part's task (`audit_part`) and the report task that ends an audit (`audit_report`), so
that `dags/ledger_pipeline.py` (the batch audit after every run) and `dags/ledger_replay.py`
(the daily full audit) hold only their flow; `dags/ledger_reconcile.py` shares the settings
and runs on its statement asset and a schedule (`on_asset_and_schedule`).

The DAG processor imports this module whenever it parses a DAG file, so it imports only
Airflow's SDK and nothing of the platform: every task body imports
`ledger_engine.tasks.audit_dag` (and through it Spark, Great Expectations, the store) only when
the task runs (`tests/dags` checks what parsing loads). A DAG file made of these must still
say `airflow` somewhere: the DAG processor skips files that do not (both import `chain` from
`airflow.sdk`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from airflow.providers.standard.decorators.python import _PythonDecoratedOperator
from airflow.sdk import (
    Asset,
    AssetOrTimeSchedule,
    CronTriggerTimetable,
    TriggerRule,
    XComArg,
    dag,
    get_current_context,
    task,
)
from airflow.sdk.bases.decorator import TaskDecorator, task_decorator_factory

from ledger_engine.web.links import PAGE_KEY, AuditReportLink, ReconciliationLink

# The kinds of audit, as `ledger_engine.audit.findings` names them (`BATCHES`, `FULL`): spelled
# again here because importing that package at parse time would load the platform;
# tests/dags/test_dag_parts.py checks that the two spellings agree.
BATCH_AUDIT = "batches"
FULL_AUDIT = "full"

# An audit part's task, the same in both DAGs, so that a task id names one part everywhere
# (on the report page, in the XComs the report task reads).
PART_TASKS = {
    "merkle": "merkle_snapshot_check",
    "great_expectations": "great_expectations_checkpoint",
    "replay": "replay_event_log",
}
REPORT_TASK = "write_audit_report"
REPORT_TIMEOUT = timedelta(minutes=30)

# What each part's task checks, shown as the task's documentation in the Airflow UI.
PART_DOCS = {
    ("merkle", BATCH_AUDIT): "The hash chain over the scope, the Merkle digests against the "
    "change log of the scope, the scope's batch counts.",
    ("merkle", FULL_AUDIT): "`ledger verify`: hash chain, Merkle trees recomputed in "
    "PostgreSQL, batch counts.",
    ("great_expectations", BATCH_AUDIT): "The batch suite (`ledger_batch_integrity`) over the "
    "batches in scope.",
    ("great_expectations", FULL_AUDIT): "The whole-ledger Great Expectations suite.",
    ("replay", FULL_AUDIT): "Replay the stored event log; fail on any difference.",
}

log = logging.getLogger(__name__)


def ledger_dag(
    dag_id: str,
    *,
    description: str,
    schedule: str | Asset | AssetOrTimeSchedule | None,
    dagrun_timeout: timedelta,
    tags: list[str],
    doc_md: str | None,
    params: dict[str, Any] | None = None,
) -> Callable[[Callable[[], None]], Callable[..., Any]]:
    """Airflow's `@dag` with what every ledger DAG shares: no catch-up, one run at a time (two
    runs must never drive the same streaming checkpoint, write one audit mark twice, nor
    record one source's reconciliation at once), no retries (a failed audit is a finding, not
    a glitch to try again); `params` where a run may be narrowed (none by default).

    No `start_date`: with one, Airflow's cron timetable (catch-up off) schedules the latest
    past tick as soon as the DAG is switched on, so switching `ledger_replay` on ran a full
    audit at once, and the run a person then triggered was a second one. Without it the first
    run is the next tick (`on_clock`); a clock schedule given as a string is made one here."""
    return dag(
        dag_id=dag_id,
        description=description,
        schedule=on_clock(schedule) if isinstance(schedule, str) else schedule,
        catchup=False,
        max_active_runs=1,
        dagrun_timeout=dagrun_timeout,
        default_args={"owner": "ledger", "retries": 0},
        tags=tags,
        doc_md=doc_md,
        params=params,
    )


def on_asset_and_schedule(asset: Asset, schedule: str | None) -> Asset | AssetOrTimeSchedule:
    """A DAG's schedule that runs it whenever `asset` is updated and also on `schedule` (a
    cron expression or preset, in UTC as every ledger DAG's), or only on the asset's updates
    (and by hand) where `schedule` is None."""
    if schedule is None:
        return asset
    return AssetOrTimeSchedule(timetable=on_clock(schedule), assets=asset)


def clock_tags(schedule: str | None) -> list[str]:
    """The tag that shows a DAG's clock in Airflow's DAG list, for a DAG scheduled on an
    asset and a clock (`on_asset_and_schedule`): the list's Schedule column shows only the
    asset of such a DAG (Airflow 3.3's UI draws the asset and drops the timetable's summary),
    its Tags column shows this one. None for a DAG on no clock."""
    return [] if schedule is None else [f"clock: {schedule} (UTC)"]


def on_clock(schedule: str) -> CronTriggerTimetable:
    """A run at every tick of `schedule` (a cron expression or preset, in UTC as every ledger
    DAG's), the first at the next tick after the DAG is first seen: never one for a tick that
    passed before it was switched on (see `ledger_dag`).

    `run_immediately` is a zero `timedelta`, not False: Airflow 3.3 treats False as its default
    and still runs the tick that passed when the DAG is switched on within 10% of the interval
    (at least 5 minutes) after it, so a daily DAG switched on before 02:24 UTC ran at once."""
    return CronTriggerTimetable(schedule, timezone="UTC", run_immediately=timedelta(0))


def audit_part(part: str, kind: str, timeout: timedelta) -> XComArg:
    """The task that runs `part` (`merkle`, `great_expectations`, `replay`) of an audit of
    `kind`, publishes its checks and fails if one failed; its output is the part's summary.

    It runs once everything before it is done, whatever the outcome (`all_done`): it checks
    what *is* committed, so that every failure shows as a task of its own. (For a DAG's first
    task, with nothing before it, the rule changes nothing.)"""

    @task(
        task_id=PART_TASKS[part],
        trigger_rule=TriggerRule.ALL_DONE,
        execution_timeout=timeout,
        doc_md=PART_DOCS[(part, kind)],
    )
    def run_part() -> dict[str, Any]:
        from ledger_engine.tasks.audit_dag import audit_part_task

        return audit_part_task(part, kind, log)

    return run_part()


def audit_report(
    kind: str, parts: Mapping[str, XComArg], pipeline: XComArg | None = None
) -> XComArg:
    """The task that ends an audit of `kind`: the HTML report from what the `parts` (part ->
    its task's output, in the report's order) published, the audit's mark if every check
    passed; it fails if any check failed or any task before it did not succeed.

    `pipeline`, the task that committed the batches (if any), is shown on the page as a check
    of its own when it failed, and takes no part in the mark. The report task is the DAG's only
    leaf, and Airflow derives a run's state from its leaves: a run is green only when every
    task before it succeeded."""
    before = [*([pipeline] if pipeline is not None else []), *parts.values()]
    part_tasks = [(part, output.operator.task_id) for part, output in parts.items()]
    pipeline_task = pipeline.operator.task_id if pipeline is not None else None

    @audit_report_task(
        task_id=REPORT_TASK,
        trigger_rule=TriggerRule.ALL_DONE,
        execution_timeout=REPORT_TIMEOUT,
        doc_md="Write the HTML audit report and the audit's mark if every check passed; fail "
        "if any check failed or any task before failed. *Audit report* opens the page.",
    )
    def write_audit_report(upstream: dict[str, dict[str, Any] | None]) -> dict[str, Any]:
        # `upstream`: each task before this one -> its output, None when it did not succeed.
        from ledger_engine.report.provenance import Provenance
        from ledger_engine.tasks.audit_dag import report_task

        ti = get_current_context()["ti"]
        written_by = Provenance.from_airflow(ti.dag_id, ti.run_id, ti.task_id)
        return report_task(
            kind, part_tasks, upstream, log, written_by, pipeline_task, publish_page(ti)
        )

    return write_audit_report({output.operator.task_id: output for output in before})


# --- Report tasks and their links ----------------------------------------------------------
# A report task is a TaskFlow task whose operator carries the link to the page it writes
# (`ledger_engine.web.links`): Airflow's task runner asks an operator's own links for their
# URL when the task ends. TaskFlow's `@task` has no way to add links, so each kind of report
# task has an operator class of its own, Airflow's `@task` operator with the link added.


class _AuditReportOperator(_PythonDecoratedOperator):
    operator_extra_links = (AuditReportLink(),)


class _ReconciliationPageOperator(_PythonDecoratedOperator):
    operator_extra_links = (ReconciliationLink(),)


def audit_report_task(**kwargs: Any) -> TaskDecorator:
    """`@task(**kwargs)` for a task that writes an audit page (its *Audit report* link)."""
    return task_decorator_factory(decorated_operator_class=_AuditReportOperator, **kwargs)


def reconciliation_page_task(**kwargs: Any) -> TaskDecorator:
    """`@task(**kwargs)` for a task that writes a reconciliation page (its *Reconciliation*
    link)."""
    return task_decorator_factory(decorated_operator_class=_ReconciliationPageOperator, **kwargs)


def publish_page(ti: Any) -> Callable[[Path], None]:
    """What a report task calls with the path of the page it wrote: the page's name, published
    for the task's link (`links.PAGE_KEY`)."""

    def publish(page: Path) -> None:
        ti.xcom_push(key=PAGE_KEY, value=page.name)

    return publish
