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


def may_read(user: BaseUser) -> bool:
    """Whether the auth manager lets `user` read the pipeline's runs."""
    return get_auth_manager().is_authorized_dag(
        method="GET",
        access_entity=DagAccessEntity.RUN,
        details=DagDetails(id=PIPELINE_DAG),
        user=user,
    )


def reader(user: Annotated[BaseUser, Depends(get_user)]) -> BaseUser:
    """The request's user, if they may read the pages; else 403 (no session: 401, raised by
    `get_user`)."""
    if not may_read(user):
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            f"{user.get_name()} may not read the runs of {PIPELINE_DAG}",
        )
    return user
