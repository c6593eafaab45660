"""The web application the plugin mounts under Airflow's address (`links.MOUNT`): the audit
and reconciliation pages and the Great Expectations Data Docs, each served from its own folder
only, to a user `access.reader` lets in; and the breaks workbench (`workbench`: `/breaks`, and
its `actions`).

- `/` goes to the pages' index (`<reports>/index.html`, which lists every audit and
  reconciliation page);
- `/reports/<name>` is a file of the reports folder (`Settings.reports`): a page, its
  summary, the index;
- `/data-docs/<ledger>/<page>` is a file of a ledger's Data Docs site
  (`<expectations>/<ledger>/gx/uncommitted/data_docs/local_site/`), and nothing else of the
  Great Expectations project (its configuration may name credentials).

A report page links to its checks' Data Docs pages by their `file:` URL, which a browser
refuses to follow from a page served over HTTP; served here, such links into the Data Docs
site become links to `/data-docs/` (`served_page`), while the file on disk keeps the links
that work when it is opened as a file.

The settings are read from the environment when the first request comes (the API server's
`LEDGER_*` variables, as the tasks read them), so loading the plugin in Airflow's other
components reads nothing.
"""

from __future__ import annotations

import mimetypes
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path, PurePosixPath

from airflow.api_fastapi.app import get_auth_manager
from fastapi import Depends, FastAPI, HTTPException, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
)
from starlette.exceptions import HTTPException as StarletteHTTPException

from ledger_engine.config import Settings
from ledger_engine.report.naming import INDEX_NAME
from ledger_engine.web.access import reader
from ledger_engine.web.actions import router as actions
from ledger_engine.web.pages import HEADERS, mounted, notice
from ledger_engine.web.served_files import served_file
from ledger_engine.web.workbench import open_ledger_side
from ledger_engine.web.workbench import router as workbench

# Where Great Expectations keeps a project's Data Docs site, below the ledger's folder of
# `Settings.expectations` (`audit.expectations`: the project is `<ledger>/gx`, the site
# `local_site`).
DATA_DOCS_SITE = ("gx", "uncommitted", "data_docs", "local_site")
NO_PAGE_YET = "No report yet"
NO_PAGE_YET_TEXT = (
    "No audit or reconciliation has written a page yet: the pipeline's first run (or `ledger"
    " audit`, or a reconciliation) writes one, and the index of every page with it."
)


def ledger_app(settings: Callable[[], Settings] = Settings.from_env) -> FastAPI:
    """The application, reading its folders from `settings()` once, when first asked."""
    app = FastAPI(title="Ledger pages", docs_url=None, redoc_url=None, openapi_url=None)
    folders = cache(settings)

    @app.get("/", dependencies=[Depends(reader)])
    def home(request: Request) -> Response:
        if served_file(folders().reports, INDEX_NAME) is None:
            return notice(request, status.HTTP_200_OK, NO_PAGE_YET, NO_PAGE_YET_TEXT)
        return RedirectResponse(
            mounted(request, f"reports/{INDEX_NAME}"), status.HTTP_303_SEE_OTHER
        )

    @app.get("/reports/{path:path}", dependencies=[Depends(reader)])
    def report_file(path: str, request: Request) -> Response:
        found = served_file(folders().reports, path)
        if found is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"no report named {path!r}")
        if found.suffix != ".html":
            return FileResponse(found, headers=HEADERS)
        docs = mounted(request, "data-docs/")
        page = served_page(found.read_text(encoding="utf-8"), folders().expectations, docs)
        return HTMLResponse(page, headers=HEADERS)

    @app.get("/data-docs/{path:path}", dependencies=[Depends(reader)])
    def data_docs_file(path: str) -> FileResponse:
        found = data_docs_file_of(folders().expectations, path)
        if found is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"no Data Docs page named {path!r}")
        media = mimetypes.guess_type(found.name)[0] or "application/octet-stream"
        return FileResponse(found, media_type=media, headers=HEADERS)

    app.state.ledger_side = cache(lambda: open_ledger_side(folders()))
    # The actions first: a GET of `/breaks/match` is theirs, not a break's named "match".
    app.include_router(actions)
    app.include_router(workbench)

    @app.exception_handler(StarletteHTTPException)
    def refused(request: Request, exc: StarletteHTTPException) -> Response:
        return refusal(request, exc.status_code, str(exc.detail))

    @app.exception_handler(RequestValidationError)
    def malformed(request: Request, exc: RequestValidationError) -> Response:
        return refusal(request, status.HTTP_400_BAD_REQUEST, malformed_words(exc))

    return app


def data_docs_file_of(expectations: Path, requested: str) -> Path | None:
    """The file `requested` (`<ledger>/<path in its site>`) names in a ledger's Data Docs site
    under `expectations`, or None: nothing outside a site is served."""
    relative = PurePosixPath(requested)
    parts = relative.parts
    if relative.is_absolute() or len(parts) < 2 or parts[0] == "..":
        return None
    site = PurePosixPath(parts[0], *DATA_DOCS_SITE)
    if not (expectations / site).is_dir():
        return None
    return served_file(expectations / site, str(PurePosixPath(*parts[1:])))


def served_page(html: str, expectations: Path, data_docs_url: str) -> str:
    """A report page as served: its `file:` links into a ledger's Data Docs site under
    `expectations` made links to `data_docs_url` (the `/data-docs/` route), the rest as is.
    Only links into a site (`<ledger>/gx/uncommitted/data_docs/local_site/`) are rewritten:
    that route serves nothing else."""
    into_site = re.compile(
        re.escape(expectations.resolve().as_uri() + "/")
        + r"([^/\"'<>\s]+)/"
        + re.escape("/".join(DATA_DOCS_SITE) + "/")
    )
    return into_site.sub(lambda link: f"{data_docs_url}{link[1]}/", html)


def malformed_words(exc: RequestValidationError) -> str:
    """What was wrong with a request's values, in a line of the workbench's own words
    ("a break's id is a whole number, not 'abc'; note: at most 2000 characters"), never the
    validating library's sentences, which name its types."""
    said = []
    for error in exc.errors():
        location = error.get("loc", ())
        field = str(location[1]) if len(location) > 1 else "request"
        said.append(_field_words(field, error))
    return "Refused: " + "; ".join(dict.fromkeys(said))


# The fields whose values name a break (a path's id, a form's ticks): said as what they are.
_BREAK_FIELDS = ("break_id", "from_break")


def _field_words(field: str, error: dict) -> str:
    """One field's fault: what the field takes, and what it was given (shortened)."""
    kind = str(error.get("type", ""))
    given = error.get("input")
    shown = f", not {str(given)[:40]!r}" if isinstance(given, str) else ""
    if kind.startswith("int_") and field in _BREAK_FIELDS:
        return f"a break's id is a whole number{shown}"
    if kind.startswith("int_"):
        return f"{field}: a whole number{shown}"
    if kind == "string_too_long":
        return f"{field}: at most {error.get('ctx', {}).get('max_length')} characters"
    if kind == "missing":
        return f"{field}: missing"
    return f"{field}: not understood{shown}"


def refusal(request: Request, code: int, detail: str) -> Response:
    """What a refused request gets: a browser asking for a page without a session goes to
    Airflow's login and comes back; anything else gets the code and a short page or JSON."""
    wants_page = "text/html" in request.headers.get("accept", "")
    if code == status.HTTP_401_UNAUTHORIZED and wants_page and request.method == "GET":
        login = get_auth_manager().get_url_login(next_url=str(request.url))
        return RedirectResponse(login, status.HTTP_303_SEE_OTHER)
    if not wants_page:
        return JSONResponse({"detail": detail}, code)
    return notice(request, code, _TITLES.get(code, "Refused"), detail)


_TITLES = {
    status.HTTP_400_BAD_REQUEST: "Not understood",
    status.HTTP_401_UNAUTHORIZED: "Not logged in",
    status.HTTP_403_FORBIDDEN: "Not allowed",
    status.HTTP_404_NOT_FOUND: "Not found",
}
