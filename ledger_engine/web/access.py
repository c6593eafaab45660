"""Who may read the ledger's pages: the Airflow user of the request, by Airflow's own session,
and what Airflow's auth manager lets them do.

Airflow does not protect a plugin's endpoints: each route here depends on `reader`, which
takes the user from the request as Airflow's own API does (`get_user`: a bearer token, or the
UI's session cookie) and asks the configured auth manager whether that user may read the runs
of the pipeline's DAG. Reading the pages is reading what the pipeline's runs found, so the
permission is that one (with the simple auth manager, every role from `viewer` up; with the
FAB auth manager, "can read" on DAG runs of `ledger_pipeline`). A request without a valid
session gets 401 (a page asked for by a browser is sent to Airflow's login, and back), one
whose user lacks the permission 403.

Working breaks (a match by hand, a write-off, starting a reconciliation) changes what
reconciliation decided, which `ledger_reconcile`'s runs do: it needs leave to run that DAG,
`worker` (with the simple auth manager, the roles `user`, `op` and `admin`, not `viewer`;
with the FAB auth manager, "can create" on DAG runs of `ledger_reconcile`).
"""

from __future__ import annotations

from typing import Annotated

from airflow.api_fastapi.app import get_auth_manager
from airflow.api_fastapi.auth.managers.models.base_user import BaseUser
from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity, DagDetails
from airflow.api_fastapi.core_api.security import get_user
from fastapi import Depends, HTTPException, status

# The DAG whose runs' findings the pages show: reading them needs leave to read its runs.
PIPELINE_DAG = "ledger_pipeline"
# The DAG whose decisions working a break changes: that needs leave to run it.
RECONCILE_DAG = "ledger_reconcile"


def may_read(user: BaseUser) -> bool:
    """Whether the auth manager lets `user` read the pipeline's runs."""
    return _may(user, "GET", PIPELINE_DAG)


def reader(user: Annotated[BaseUser, Depends(get_user)]) -> BaseUser:
    """The request's user, if they may read the pages; else 403 (no session: 401, raised by
    `get_user`)."""
    if not may_read(user):
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            f"{user.get_name()} may not read the runs of {PIPELINE_DAG}",
        )
    return user


def may_work(user: BaseUser) -> bool:
    """Whether the auth manager lets `user` run reconciliation, and so work its breaks."""
    return _may(user, "POST", RECONCILE_DAG)


def worker(user: Annotated[BaseUser, Depends(reader)]) -> BaseUser:
    """The request's user, if they may read the pages and work the breaks; else 403."""
    if not may_work(user):
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            f"{user.get_name()} may read the breaks but not work them (that needs leave to"
            f" run {RECONCILE_DAG})",
        )
    return user


def _may(user: BaseUser, method: str, dag_id: str) -> bool:
    """Whether the auth manager lets `user` do `method` on the runs of the DAG `dag_id`."""
    return get_auth_manager().is_authorized_dag(
        method=method,
        access_entity=DagAccessEntity.RUN,
        details=DagDetails(id=dag_id),
        user=user,
    )
