"""The workbench's forms against cross-site requests.

Airflow's UI session is a cookie (`_token`, SameSite=Lax): a browser sends it with a form
POSTed from any page of the same site, another port of the same host included. So a form
that changes the ledger carries a *form key*, an HMAC of the session's token under the API
server's secret (`[api] secret_key`), which a page elsewhere cannot read nor compute; and a
POST the browser marks as cross-site (`Sec-Fetch-Site`), or whose `Origin` is another one, is
refused before its key is looked at.

A request that authenticates with an `Authorization` header (a script with a token of
Airflow's API) carries no cookie a browser could have added: it needs no form key, as with
Airflow's own API.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from functools import cache
from urllib.parse import urlsplit

from airflow.api_fastapi.auth.managers.base_auth_manager import COOKIE_NAME_JWT_TOKEN
from fastapi import HTTPException, Request, status

FORM_KEY_FIELD = "form_key"
_PURPOSE = b"ledger workbench form\x00"


def form_key(request: Request) -> str:
    """The key the forms of a page answering `request` carry (empty for a request that
    authenticated by header: it needs none)."""
    session = _session_cookie(request)
    if session is None:
        return ""
    return hmac.new(_secret(), _PURPOSE + session.encode(), hashlib.sha256).hexdigest()


def check_form(request: Request, submitted: str | None) -> None:
    """Refuse (403) a POST that may come from another site: marked cross-site by the
    browser, from another origin, or, on a session cookie, without the session's form key."""
    if request.headers.get("sec-fetch-site") == "cross-site":
        raise HTTPException(status.HTTP_403_FORBIDDEN, "refused: the form came from another site")
    origin = request.headers.get("origin")
    if origin is not None and not _same_origin(origin, request):
        raise HTTPException(status.HTTP_403_FORBIDDEN, f"refused: the form came from {origin}")
    if _session_cookie(request) is None:
        return
    if not submitted or not hmac.compare_digest(submitted, form_key(request)):
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            "refused: the form is not from this session's page (reload the page and try again)",
        )


def _session_cookie(request: Request) -> str | None:
    """The UI session's token, for a request that authenticates by the cookie (Airflow's
    `get_user` takes a bearer token first, the cookie otherwise)."""
    scheme, _, _ = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer":
        return None
    return request.cookies.get(COOKIE_NAME_JWT_TOKEN)


def _same_origin(origin: str, request: Request) -> bool:
    """Whether `origin` is the one the request was sent to (scheme, host and port), or that
    of Airflow's configured address (`[api] base_url`, where a proxy serves it)."""
    from airflow.configuration import conf

    sent = urlsplit(origin)
    served = [(request.url.scheme, request.url.netloc)]
    if configured := conf.get("api", "base_url", fallback=""):
        served.append(urlsplit(configured)[:2])
    # An opaque origin ("null": a sandboxed page, a file) is no origin of ours.
    return bool(sent.scheme and sent.netloc) and (sent.scheme, sent.netloc) in served


@cache
def _secret() -> bytes:
    """The API server's secret; one of this process's own where none is configured (forms
    then hold for this process only)."""
    from airflow.configuration import conf

    configured = conf.get("api", "secret_key", fallback="")
    return configured.encode() if configured else secrets.token_bytes(32)
