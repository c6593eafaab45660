"""The breaks workbench's actions: a match by hand, a write-off and starting a reconciliation,
each the product function the CLI calls (`reconcile.resolve`), recorded as done by the Airflow
user (`<name>@airflow`).

- `POST /breaks/match`, `POST /breaks/<id>/write-off`, `POST /reconcile`: each needs
  `access.worker` and a form from this session's page (`forms.check_form`). A success answers
  with a redirect (303) to the page that shows its outcome (post/redirect/get); a refusal
  (`ResolutionRefused`, an unknown source) is the page the form was on again, with the reason,
  code 409 (400 for a request that lacks what it needs: a blank or overlong note), what the
  person ticked and typed kept, and changes nothing.
- A GET of an action's address leads (303) to the page the action belongs to. Airflow's UI
  keeps the address of the page in its frame in its own, and loads it by GET when the user
  reloads: the address of a page that answered a POST (a refusal) must lead somewhere.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from airflow.api_fastapi.auth.managers.models.base_user import BaseUser
from fastapi import APIRouter, Form, Request, status
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from ledger_engine.config import NOTE_LIMIT
from ledger_engine.errors import ResolutionRefused
from ledger_engine.reconcile.break_states import MANUAL_MATCH, WRITTEN_OFF
from ledger_engine.reconcile.resolve import manual_match, write_off
from ledger_engine.reconcile.storage.queue import QueueFilter
from ledger_engine.reconcile.storage.resolutions import require_note
from ledger_engine.web.forms import FORM_KEY_FIELD, check_form
from ledger_engine.web.pages import mounted
from ledger_engine.web.reconcile_runs import NotStarted, start_reconciliation
from ledger_engine.web.workbench import (
    DONE,
    Kept,
    LedgerSide,
    Reader,
    Side,
    Worker,
    break_view,
    queue_view,
    who,
)

# A note longer than this is not read at all (a guard on the request's size); one up to it is
# refused by `_note_refusal` with the page and the note kept.
Note = Annotated[str, Form(max_length=NOTE_LIMIT * 10)]
FormKey = Annotated[str, Form(alias=FORM_KEY_FIELD)]

router = APIRouter()


@router.get("/breaks/match")
@router.get("/reconcile")
def queue_again(request: Request, user: Reader) -> RedirectResponse:
    """The address of an action on the queue, loaded again: the queue."""
    return RedirectResponse(mounted(request, "breaks"), status.HTTP_303_SEE_OTHER)


@router.get("/breaks/{break_id}/write-off")
def break_again(request: Request, break_id: int, user: Reader) -> RedirectResponse:
    """The address of a break's write-off, loaded again: the break's page."""
    return RedirectResponse(mounted(request, f"breaks/{break_id}"), status.HTTP_303_SEE_OTHER)


@router.post("/breaks/match")
def match(
    request: Request,
    user: Worker,
    side: Side,
    note: Note = "",
    break_id: Annotated[list[int] | None, Form()] = None,
    from_break: Annotated[int | None, Form()] = None,
    form_key_: FormKey = "",
) -> Response:
    """Match the breaks chosen (and `from_break`, the page's own) by hand."""
    check_form(request, form_key_)
    chosen = sorted(set(break_id or []) | ({from_break} if from_break is not None else set()))
    kept = Kept("match", frozenset(break_id or ()), note)
    if (blank := _note_refusal(note)) is not None:  # lacks what it needs: not a conflict
        return _match_refused(request, side, user, from_break, blank, kept, bad_request=True)
    try:
        manual_match(side.engine, chosen, who=who(user), note=note)
    except ResolutionRefused as refused:
        return _match_refused(request, side, user, from_break, str(refused), kept)
    return _redirect(request, f"breaks/{chosen[0]}", MANUAL_MATCH)


@router.post("/breaks/{break_id}/write-off")
def write_break_off(
    request: Request,
    break_id: int,
    user: Worker,
    side: Side,
    note: Note = "",
    form_key_: FormKey = "",
) -> Response:
    """Write the break off: its adjusting event landed in the event inbox."""
    check_form(request, form_key_)
    kept = Kept("write-off", note=note)
    if (blank := _note_refusal(note)) is not None:  # lacks what it needs: not a conflict
        said, code = f"Refused: {blank}", status.HTTP_400_BAD_REQUEST
        return break_view(request, side, user, break_id, refused=said, code=code, kept=kept)
    sources = side.sources()
    try:
        if sources is None:
            raise ResolutionRefused("the ledger declares no statement sources")
        posting = write_off(
            side.engine, sources, side.settings.inbox, break_id, who=who(user), note=note
        )
    except ResolutionRefused as refused:
        said = f"Refused: {refused}"
        return break_view(request, side, user, break_id, refused=said, kept=kept)
    if posting.request_id is None:
        return _redirect(request, f"breaks/{break_id}", WRITTEN_OFF)
    return _redirect(request, f"breaks/{break_id}", "posted_again" if posting.again else "posted")


@router.post("/reconcile")
def reconcile(
    request: Request,
    user: Worker,
    side: Side,
    source: Annotated[str, Form(max_length=200)] = "",
    form_key_: FormKey = "",
) -> Response:
    """Start a run of `ledger_reconcile` for the declared source `source`; the queue then
    says where the run stands (`?started=<run id>`)."""
    check_form(request, form_key_)
    sources = side.sources()
    if sources is None or source not in sources.sources:
        refused = f"Refused: no source named {source!r} is declared"
        return queue_view(request, side, user, QueueFilter(), refused=refused)
    try:
        started = start_reconciliation(source, user.get_name())
    except NotStarted as refused:
        return queue_view(request, side, user, QueueFilter(), refused=f"Refused: {refused}")
    return RedirectResponse(
        f"{mounted(request, 'breaks')}?{urlencode({'started': started.run_id})}",
        status.HTTP_303_SEE_OTHER,
    )


def _note_refusal(note: str) -> str | None:
    """Why `note` cannot be taken (blank, or longer than `NOTE_LIMIT`), or None."""
    try:
        require_note(note)
    except ResolutionRefused as blank:
        return str(blank)
    if len(note) > NOTE_LIMIT:
        return f"a note is at most {NOTE_LIMIT} characters ({len(note)} given)"
    return None


def _match_refused(
    request: Request,
    side: LedgerSide,
    user: BaseUser,
    from_break: int | None,
    refused: str,
    kept: Kept,
    *,
    bad_request: bool = False,
) -> HTMLResponse:
    """The page the match was asked from again (a break's, else the queue), saying why not,
    with the ticks and the note kept."""
    said = f"Refused: {refused}"
    code = status.HTTP_400_BAD_REQUEST if bad_request else status.HTTP_409_CONFLICT
    if from_break is not None:
        return break_view(request, side, user, from_break, refused=said, code=code, kept=kept)
    return queue_view(request, side, user, QueueFilter(), refused=said, code=code, kept=kept)


def _redirect(request: Request, path: str, done: str) -> RedirectResponse:
    """To the page at `path`, saying what was `done` (a key of `DONE`)."""
    assert done in DONE, done
    return RedirectResponse(f"{mounted(request, path)}?done={done}", status.HTTP_303_SEE_OTHER)
