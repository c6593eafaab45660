"""The workbench's forms against cross-site requests (`web.forms`): a POST on the UI's session
cookie passes only with the key of that session's pages; one the browser marks cross-site, or
sent from another origin, never does; a request with a bearer token needs no key (no browser
adds that header to a form another site posts).
"""

from __future__ import annotations

import pytest
from fastapi import HTTPException
from hypothesis import given
from hypothesis import strategies as st
from starlette.requests import Request

from ledger_engine.web.forms import check_form, form_key

HOST = "airflow.example:8080"


def posted(headers: dict[str, str]) -> Request:
    """A POST to the workbench as it reaches the application, with `headers`."""
    scope = {
        "type": "http",
        "method": "POST",
        "scheme": "http",
        "server": ("airflow.example", 8080),
        "path": "/ledger/breaks/1/write-off",
        "root_path": "",
        "query_string": b"",
        "headers": [
            (k.lower().encode(), v.encode()) for k, v in ({"host": HOST} | headers).items()
        ],
    }
    return Request(scope)


def session(token: str) -> dict[str, str]:
    return {"cookie": f"_token={token}"}


def refusal(request: Request, submitted: str | None) -> str | None:
    try:
        check_form(request, submitted)
    except HTTPException as refused:
        assert refused.status_code == 403
        return str(refused.detail)
    return None


def test_a_form_of_the_sessions_page_passes() -> None:
    request = posted(session("the.session.token"))
    assert refusal(request, form_key(request)) is None
    same_origin = posted(session("the.session.token") | {"origin": f"http://{HOST}"})
    assert refusal(same_origin, form_key(same_origin)) is None


@given(token=st.from_regex(r"[A-Za-z0-9_-]{1,40}(\.[A-Za-z0-9_-]{1,40}){0,2}", fullmatch=True))
def test_the_key_is_the_sessions_own(token: str) -> None:
    ours, another = posted(session(token)), posted(session(token + "x"))

    assert form_key(ours) == form_key(posted(session(token))), "the same for the same session"
    assert form_key(ours) != form_key(another)
    assert refusal(ours, form_key(another)) is not None
    assert refusal(ours, None) is not None and refusal(ours, "") is not None


@pytest.mark.parametrize(
    ("headers", "said"),
    [
        ({"sec-fetch-site": "cross-site"}, "another site"),
        ({"origin": "http://127.0.0.1:9999"}, "http://127.0.0.1:9999"),
        ({"origin": f"https://{HOST}"}, f"https://{HOST}"),
        ({"origin": "null"}, "null"),
    ],
)
def test_a_form_from_elsewhere_is_refused_even_with_the_key(
    headers: dict[str, str], said: str
) -> None:
    request = posted(session("the.session.token") | headers)

    refused = refusal(request, form_key(request))

    assert refused is not None and said in refused


def test_a_request_with_a_bearer_token_needs_no_key_and_a_cookie_does() -> None:
    bearer = posted({"authorization": "Bearer a.token.value"} | session("the.session.token"))
    assert form_key(bearer) == "" and refusal(bearer, None) is None
    # Another scheme does not authenticate the request (Airflow reads the cookie then).
    basic = posted({"authorization": "Basic dXNlcjpwYXNz"} | session("the.session.token"))
    assert refusal(basic, None) is not None
