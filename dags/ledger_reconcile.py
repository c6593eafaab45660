"""The ledger's reconciliation against the outside world: statements in, matched on Spark,
matches and breaks recorded, the run's page written.

`ledger_reconcile` runs when a statement lands in the statement inbox, daily, and whenever
someone triggers it:

- *when a statement lands*: the DAG is scheduled on the asset `ledger_statements` (the
  statement inbox, `LEDGER_STATEMENTS`), whose watcher `statement_landed` is an event trigger
  that Airflow's triggerer runs (`ledger_engine.reconcile.trigger.StatementLanded`): every
  `LEDGER_STATEMENT_POLL_SECONDS` (30) it lists each declared source's folder and fires once
  for the files no run has loaded yet, which updates the asset and starts a run;
- *daily* by default (`@daily`; set `LEDGER_RECONCILE_SCHEDULE` in the environment of the DAG
  processor to another cron expression or preset, or to `none` for runs on statements and by
  hand only): a day's new ledger entries may close breaks, or open them;
- *by hand*: trigger it in the Airflow UI, or start it for one source from the breaks
  workbench (the *Breaks* page); `ledger reconcile [--dry-run]` runs the same reconciliation
  from a shell.

Its one param, `source`, narrows a run to one declared source (empty: every source). The
rest comes from the `LEDGER_*` environment variables read by
`ledger_engine.config.Settings.from_env()` inside each task.

    reconcile_statements
      -> write_reconciliation_page

- `reconcile_statements` loads the statements landed since the last run (each file once),
  matches each declared source's new items and those of its open breaks by the source's rules
  on Spark, and records the matches and breaks, one transaction per source. Its return value
  (XCom) is the run's summary: the files loaded, and per source the items considered, the
  matches, the open breaks by reason, the breaks opened and closed, and the run recorded.
- `write_reconciliation_page` writes the HTML reconciliation page of those runs under
  `LEDGER_REPORTS` and returns its path.

Open breaks are what reconciliation is for, not a failure: a run with breaks is green, and
shows them in its summary and on its page (`ledger breaks` lists them). A run fails only when
reconciliation itself fails: a mistake in the declaration, a database or inbox it cannot
reach, Spark failing. A ledger that declares no statement sources has nothing to reconcile:
its runs skip their tasks.

`max_active_runs=1`: two runs of a source must not record at once (the store also takes a
lock per source and refuses a run whose scope another run recorded meanwhile). Task bodies
live in `ledger_engine.tasks.reconcile_dag`, imported when a task runs, so parsing this file
reads only the settings and the trigger's class, never Spark or a database.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from airflow.sdk import Asset, AssetWatcher, Param, get_current_context, task

from ledger_engine.config import Settings
from ledger_engine.dags import (
    clock_tags,
    ledger_dag,
    on_asset_and_schedule,
    publish_page,
    reconciliation_page_task,
)
from ledger_engine.reconcile.trigger import StatementLanded
from ledger_engine.web.links import RECONCILE_SOURCE_PARAM

DAG_ID = "ledger_reconcile"
SETTINGS = Settings.from_env()
STATEMENTS = Asset(
    name="ledger_statements",
    uri=SETTINGS.statements.as_uri(),
    watchers=[
        AssetWatcher(
            name="statement_landed",
            trigger=StatementLanded(poll_seconds=SETTINGS.statement_poll_seconds),
        )
    ],
)

log = logging.getLogger(__name__)


def _origin() -> str:
    """Who recorded the runs: this DAG run, as the pipeline names itself in its lease."""
    return f"airflow {DAG_ID} {get_current_context()['run_id']}"


@task(execution_timeout=timedelta(hours=1))
def reconcile_statements() -> dict[str, Any]:
    """Load the new statements, match each source (or the run's `source`) on Spark, record
    its matches and breaks."""
    from ledger_engine.tasks.reconcile_dag import reconcile_task

    return reconcile_task(
        _origin(), log, get_current_context()["params"].get(RECONCILE_SOURCE_PARAM)
    )


@reconciliation_page_task(execution_timeout=timedelta(minutes=30))
def write_reconciliation_page(run_ids: list[int]) -> dict[str, Any]:
    """Write the HTML page of the runs just recorded, naming this task of this DAG run; its
    *Reconciliation* link opens the page."""
    from ledger_engine.report.provenance import Provenance
    from ledger_engine.tasks.reconcile_dag import page_task

    ti = get_current_context()["ti"]
    written_by = Provenance.from_airflow(ti.dag_id, ti.run_id, ti.task_id)
    return page_task(run_ids, written_by, log, publish_page(ti))


@ledger_dag(
    DAG_ID,
    description="Statements matched with the ledger on Spark when they land and daily; breaks",
    schedule=on_asset_and_schedule(STATEMENTS, SETTINGS.reconcile_schedule),
    dagrun_timeout=timedelta(hours=2),
    tags=[
        "ledger",
        "reconciliation",
        "spark",
        "postgres",
        *clock_tags(SETTINGS.reconcile_schedule),
    ],
    doc_md=__doc__,
    params={
        RECONCILE_SOURCE_PARAM: Param(
            None,
            type=["null", "string"],
            title="Source",
            description="Reconcile this declared source alone (empty: every source).",
        )
    },
)
def ledger_reconcile() -> None:
    write_reconciliation_page(reconcile_statements()["run_ids"])


ledger_reconcile()
