"""The Airflow plugin: the ledger's pages mounted at `links.MOUNT` in Airflow's API server,
and two entries in the UI's navigation that show them inside the UI: *Ledger* (the reports)
and *Breaks* (the breaks workbench).

Airflow finds it through the package's entry point (`airflow.plugins` in pyproject.toml), so
every Airflow that has the package installed loads it: `ledger airflow`, the compose image.
Airflow loads every plugin in every component, every task process included (for the plugins'
macros), where the pages are never served: this module imports only the links, and the web
application is imported and built on its first request (`PagesOnFirstRequest`), which saved
0.6 s of imports in every task.
"""

from __future__ import annotations

from typing import Any, ClassVar

from airflow.plugins_manager import AirflowPlugin

from ledger_engine.web.links import MOUNT, REPORTS_VIEW, AuditReportLink, ReconciliationLink


class PagesOnFirstRequest:
    """The pages' ASGI application (`app.ledger_app`), imported and built when the first
    request comes."""

    def __init__(self) -> None:
        self._app: Any = None

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if self._app is None:  # two first requests at once build two: both serve alike
            from ledger_engine.web.app import ledger_app

            self._app = ledger_app()
        await self._app(scope, receive, send)


class LedgerPlugin(AirflowPlugin):
    """The ledger's pages in Airflow."""

    name = "ledger"
    fastapi_apps: ClassVar[list[Any]] = [
        {"app": PagesOnFirstRequest(), "url_prefix": MOUNT, "name": "Ledger pages"}
    ]
    external_views: ClassVar[list[Any]] = [
        {
            "name": "Ledger",
            "href": f"{MOUNT}/",
            "destination": "nav",
            "url_route": REPORTS_VIEW,
            "nav_top_level": True,
        },
        {
            "name": "Breaks",
            "href": f"{MOUNT}/breaks",
            "destination": "nav",
            "url_route": "breaks",
            "nav_top_level": True,
        },
    ]
    # Known to the API server by class, as Airflow wants of an operator's own links.
    operator_extra_links: ClassVar[list[Any]] = [AuditReportLink(), ReconciliationLink()]
