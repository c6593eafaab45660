"""Starting `ledger_reconcile` for one source from the workbench: a manual run of the DAG with
its `source` param, created as Airflow's own API creates one (in the API server's process,
on Airflow's metadata database), and named as triggered by the user from the UI.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from ledger_engine.web.access import RECONCILE_DAG
from ledger_engine.web.links import RECONCILE_SOURCE_PARAM


@dataclass(frozen=True)
class StartedRun:
    """A run of `ledger_reconcile` just queued: its id, its page in Airflow's UI, and
    whether the DAG is paused (a paused DAG's run waits until it is switched on)."""

    source: str
    run_id: str
    ui_path: str
    paused: bool


class NotStarted(RuntimeError):
    """Airflow could not queue the run; the message says why."""


def start_reconciliation(source: str, user_name: str) -> StartedRun:
    """Queue a run of `ledger_reconcile` reconciling `source` alone, triggered by
    `user_name`; `NotStarted` where Airflow does not know the DAG (not parsed yet)."""
    from airflow.api.common.trigger_dag import trigger_dag
    from airflow.exceptions import DagNotFound
    from airflow.models.dag import DagModel
    from airflow.utils.types import DagRunTriggeredByType

    try:
        run = trigger_dag(
            RECONCILE_DAG,
            triggered_by=DagRunTriggeredByType.UI,
            triggering_user_name=user_name,
            conf={RECONCILE_SOURCE_PARAM: source},
            note=f"started from the breaks workbench for {source}",
        )
    except DagNotFound:
        raise NotStarted(f"Airflow does not know {RECONCILE_DAG} yet (not parsed)") from None
    assert run is not None, RECONCILE_DAG
    model = DagModel.get_current(RECONCILE_DAG)
    path = f"/dags/{quote(RECONCILE_DAG)}/runs/{quote(run.run_id, safe='')}"
    return StartedRun(source, run.run_id, path, bool(model is not None and model.is_paused))
