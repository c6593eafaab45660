"""Starting `ledger_reconcile` for one source from the workbench: a manual run of the DAG with
its `source` param, created as Airflow's own API creates one (in the API server's process,
on Airflow's metadata database), and named as triggered by the user from the UI; and where
such a run stands, for the page the workbench shows after starting it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from ledger_engine.web.access import RECONCILE_DAG
from ledger_engine.web.links import RECONCILE_SOURCE_PARAM


@dataclass(frozen=True)
class StartedRun:
    """A run of `ledger_reconcile`: its id, the source it reconciles, its page in Airflow's UI,
    its state (`queued`, `running`, `success`, `failed`), and whether the DAG is paused (a
    paused DAG's run waits until it is switched on)."""

    source: str
    run_id: str
    ui_path: str
    paused: bool
    state: str = "queued"


class NotStarted(RuntimeError):
    """Airflow could not queue the run; the message says why."""


def start_reconciliation(source: str, user_name: str) -> StartedRun:
    """Queue a run of `ledger_reconcile` reconciling `source` alone, triggered by
    `user_name`; `NotStarted` where Airflow does not know the DAG (not parsed yet)."""
    from airflow.api.common.trigger_dag import trigger_dag
    from airflow.exceptions import DagNotFound
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
    found = started_run(run.run_id)
    assert found is not None, run.run_id
    return found


def started_run(run_id: str) -> StartedRun | None:
    """The run `run_id` of `ledger_reconcile` as it stands now; None if there is none (the
    id comes from an address, which anyone may write)."""
    from airflow.models.dag import DagModel
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session

    with create_session() as session:
        runs = DagRun.find(dag_id=RECONCILE_DAG, run_id=[run_id], session=session)
        if not runs:
            return None
        model = DagModel.get_current(RECONCILE_DAG, session=session)
        return StartedRun(
            source=_source_of(runs[0].conf),
            run_id=runs[0].run_id,
            ui_path=f"/dags/{quote(RECONCILE_DAG)}/runs/{quote(runs[0].run_id, safe='')}",
            paused=bool(model is not None and model.is_paused),
            state=str(runs[0].state or "queued"),
        )


def _source_of(conf: Any) -> str:
    """The source a run's conf names (empty: every source)."""
    named = conf.get(RECONCILE_SOURCE_PARAM) if isinstance(conf, dict) else None
    return str(named) if named else ""
