"""The Airflow plugin: the ledger's pages mounted at `links.MOUNT` in Airflow's API server,
and a *Ledger* entry in the UI's navigation that shows them inside the UI.

Airflow finds it through the package's entry point (`airflow.plugins` in pyproject.toml), so
every Airflow that has the package installed loads it: `ledger airflow`, the compose image.
"""

from __future__ import annotations

from typing import Any, ClassVar

from airflow.plugins_manager import AirflowPlugin

from ledger_engine.web.app import ledger_app
from ledger_engine.web.links import MOUNT, AuditReportLink, ReconciliationLink


class LedgerPlugin(AirflowPlugin):
    """The ledger's pages in Airflow."""

    name = "ledger"
    fastapi_apps: ClassVar[list[Any]] = [
        {"app": ledger_app(), "url_prefix": MOUNT, "name": "Ledger pages"}
    ]
    external_views: ClassVar[list[Any]] = [
        {
            "name": "Ledger",
            "href": f"{MOUNT}/",
            "destination": "nav",
            "url_route": "ledger",
            "nav_top_level": True,
        }
    ]
    # Known to the API server by class, as Airflow wants of an operator's own links.
    operator_extra_links: ClassVar[list[Any]] = [AuditReportLink(), ReconciliationLink()]
