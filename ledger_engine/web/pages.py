"""How the application answers with a page: its templates (`templates/`, autoescaped: every
value from the database or a request is text, never markup), the headers of every page, and
the paths of its routes wherever Airflow mounted it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from ledger_engine.report.assets import assets

# Served pages are never cached by a shared cache, and never sniffed into another type.
HEADERS = {"Cache-Control": "private, no-cache", "X-Content-Type-Options": "nosniff"}

_TEMPLATES = Environment(
    loader=PackageLoader("ledger_engine.web", "templates"),
    autoescape=select_autoescape(["html"]),
)


def _utc(moment: datetime) -> str:
    """A moment as a page shows it, in UTC (as every ledger date is)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


_TEMPLATES.filters["utc"] = _utc
# The pages' one style, the reports' own (Airflow's look): `<style>{{ style }}</style>`; and
# the script that gives them the colour mode of Airflow's frame, allowed by its hash alone.
_TEMPLATES.globals["style"] = Markup(assets().style.source)
_TEMPLATES.globals["theme"] = Markup(assets().theme.source)
_TEMPLATES.globals["theme_hash"] = Markup(assets().theme.csp_hash)
# The workbench's links to Airflow's own pages open in Airflow's window, not in its frame.
_TEMPLATES.globals["airflow_links"] = Markup(assets().airflow_links.source)
_TEMPLATES.globals["airflow_links_hash"] = Markup(assets().airflow_links.csp_hash)


def mounted(request: Request, path: str) -> str:
    """The absolute path of `path` in this application, wherever Airflow mounted it (the
    mount's prefix is the request's root path)."""
    return f"{request.scope.get('root_path', '').rstrip('/')}/{path}"


def page(request: Request, template: str, code: int = 200, **context: Any) -> HTMLResponse:
    """The page `template` rendered with `context`; `home` and `breaks` (the routes of the
    reports and of the workbench) are there for every page."""
    html = _TEMPLATES.get_template(template).render(
        home=mounted(request, ""), breaks=mounted(request, "breaks"), **context
    )
    return HTMLResponse(html, code, headers=HEADERS)


def notice(request: Request, code: int, title: str, message: str) -> HTMLResponse:
    """A short page saying `title` and `message`, with the way back to the reports."""
    return page(request, "notice.html", code, title=title, message=message)
