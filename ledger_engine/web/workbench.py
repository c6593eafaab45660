"""The breaks workbench's pages: the open breaks as a queue to work in the browser, and a
break's page (the actions a person takes on them are `web.actions`').

- `GET /breaks`: the open breaks passing the filters (source, reason, account prefix, at least
  so many days open), oldest first, amounts as money in their source's unit; a form to match
  the breaks ticked, and a button per declared source to start its reconciliation (after one
  was started, `?started=<run id>` says where that run stands, as Airflow knows it);
- `GET /breaks/<id>`: one break, open or resolved: its statement entry, its ledger movement
  (or the movement that settled it), the write-off posted for it and where that stands, its
  history; forms to match it by hand with the open breaks it can be matched with, and to write
  it off.

A malformed filter or id is refused (400), an unknown break is 404, in the workbench's words.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated

from airflow.api_fastapi.auth.managers.models.base_user import BaseUser
from fastapi import APIRouter, Depends, HTTPException, Query, Request, status
from fastapi.responses import HTMLResponse, Response
from sqlalchemy import Engine

from ledger_engine.config import NOTE_LIMIT, Settings
from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.core.money import Unit, money_text
from ledger_engine.errors import SourcesError
from ledger_engine.reconcile.break_states import (
    MANUAL_MATCH,
    OPEN,
    WRITTEN_OFF,
    WriteOffStage,
    write_off_stage,
)
from ledger_engine.reconcile.matching import BREAK_REASONS, reason_words
from ledger_engine.reconcile.sources import Sources, load_sources
from ledger_engine.reconcile.storage.queue import (
    QUEUE_PAGE,
    BreakItems,
    QueuedBreak,
    QueueFilter,
    break_items,
    match_candidates,
    open_counts,
    open_queue,
    settling_movements,
)
from ledger_engine.reconcile.storage.resolutions import break_history
from ledger_engine.reconcile.write_offs import adjustment_amount
from ledger_engine.report.formats import plural
from ledger_engine.web.access import may_work, reader, worker
from ledger_engine.web.forms import FORM_KEY_FIELD, form_key
from ledger_engine.web.links import MOUNT
from ledger_engine.web.pages import mounted, page
from ledger_engine.web.reconcile_runs import StartedRun, started_run

# What a redirect after an action tells the page it lands on (by code: never text from the
# request, which a link could forge).
DONE = {
    MANUAL_MATCH: "Matched by hand.",
    WRITTEN_OFF: "Written off: nothing to adjust, the break is resolved.",
    "posted": "Write-off posted: the adjusting event is in the event inbox.",
    "posted_again": "Write-off posted again: the same adjusting event is in the event inbox.",
}


@dataclass(frozen=True)
class Kept:
    """What a person ticked and typed in a form that was refused (`form`: "match" or
    "write-off"): the page shows it again in that form."""

    form: str = ""
    chosen: frozenset[int] = frozenset()
    note: str = ""


@dataclass(frozen=True)
class LedgerSide:
    """What the workbench works on: the settings, the ledger and an engine on its schema."""

    settings: Settings
    ledger: StreamingLedger
    engine: Engine

    def sources(self) -> Sources | None:
        """The ledger's declared sources (read anew: the file may change), or None. Read only:
        `reconcile.job.declared_sources` would also create their inbox folders, which a page
        has no business doing."""
        from ledger_engine.reconcile.job import sources_file

        path = sources_file(self.settings, self.ledger)
        try:
            return load_sources(path, self.ledger.tables, self.ledger.streams)
        except (FileNotFoundError, SourcesError):
            return None


def open_ledger_side(settings: Settings) -> LedgerSide:
    """The ledger of `settings` (its `LEDGER_APP`), and an engine on its schema that leaves
    the schema as it is (the pipeline migrates it, not the pages)."""
    from ledger_engine.apps import load_ledger
    from ledger_engine.store.database import open_views

    ledger = load_ledger(settings.app)
    return LedgerSide(settings, ledger, open_views(settings, ledger))


def who(user: BaseUser) -> str:
    """How the history names an Airflow user (the CLI names `<login>@<host>`)."""
    return f"{user.get_name()}@airflow"


def opened_side(request: Request) -> LedgerSide:
    """The ledger the application works on: `app.state.ledger_side()` (`app.ledger_app` opens
    it on first use)."""
    return request.app.state.ledger_side()


# After the user: a request without a login is refused before the ledger is opened.
Side = Annotated[LedgerSide, Depends(opened_side)]
Reader = Annotated[BaseUser, Depends(reader)]
Worker = Annotated[BaseUser, Depends(worker)]

router = APIRouter()


@router.get("/breaks")
def queue_page(
    request: Request,
    user: Reader,
    side: Side,
    source: str = "",
    reason: str = "",
    account: str = "",
    min_age_days: Annotated[str, Query(max_length=6)] = "",
    done: str = "",
    started: Annotated[str, Query(max_length=250)] = "",
) -> HTMLResponse:
    """The open breaks passing the filters; a form's empty field passes every break. After a
    reconciliation was started here, `started` names its run: the page says where it stands."""
    days = _whole_days(min_age_days) if min_age_days else None
    if reason and reason not in BREAK_REASONS:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST,
            f"reason: one of {', '.join(BREAK_REASONS)}, not {reason[:40]!r}",
        )
    wanted = QueueFilter(source or None, reason or None, account or None, days)
    run = started_run(started) if started else None
    return queue_view(request, side, user, wanted, said=DONE.get(done), started=run)


@router.get("/breaks/{break_id}")
def break_page(
    request: Request, break_id: int, user: Reader, side: Side, done: str = ""
) -> Response:
    """One break, open or resolved."""
    return break_view(request, side, user, break_id, said=DONE.get(done))


def queue_view(
    request: Request,
    side: LedgerSide,
    user: BaseUser,
    wanted: QueueFilter,
    *,
    said: str | None = None,
    refused: str | None = None,
    started: StartedRun | None = None,
    code: int = status.HTTP_409_CONFLICT,
    kept: Kept = Kept(),
) -> HTMLResponse:
    """The queue page; `code` where it shows a refusal, with what was `kept` of the form."""
    sources = side.sources()
    units = sources.units if sources is not None else {}
    counts = open_counts(side.engine)
    queue = open_queue(side.engine, wanted)
    now = datetime.now(UTC)
    return page(
        request,
        "breaks.html",
        code if refused else status.HTTP_200_OK,
        wanted=wanted,
        rows=[_row(request, b, units, now) for b in queue.breaks],
        passing=queue.passing,
        page_size=QUEUE_PAGE,
        open_total=sum(counts.values()),
        source_choices=sorted({s for s, _ in counts} | set(units)),
        reason_choices=[(r, reason_words(r)) for r in BREAK_REASONS],
        declared=sorted(units),
        started=started,
        reconcile_url=mounted(request, "reconcile"),
        # Airflow's UI (a run's page) is under the address Airflow mounted the pages below.
        ui_prefix=request.scope.get("root_path", "").removesuffix(MOUNT),
        kept=kept,
        **_working(request, user, said, refused),
    )


def break_view(
    request: Request,
    side: LedgerSide,
    user: BaseUser,
    break_id: int,
    *,
    said: str | None = None,
    refused: str | None = None,
    code: int = status.HTTP_409_CONFLICT,
    kept: Kept = Kept(),
) -> HTMLResponse:
    """A break's page; 404 for a break that does not exist, `code` where it shows a refusal,
    with what was `kept` of the form."""
    item = break_items(side.engine, break_id)
    if item is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no break {break_id}")
    sources = side.sources()
    unit = sources.units.get(item.source) if sources is not None else None
    now = datetime.now(UTC)
    is_open = item.status == OPEN
    stage = write_off_stage(item.write_off_request_id, item.write_off_outcome, item.resolution)
    candidates = match_candidates(side.engine, item) if is_open else ()
    return page(
        request,
        "break.html",
        code if refused else status.HTTP_200_OK,
        item=item,
        reason=reason_words(item.reason),
        money=lambda units: "" if units is None else money_text(units, unit),
        is_open=is_open,
        settled_by_write_off=item.resolution == WRITTEN_OFF,
        write_off=write_off_words(stage, item.write_off_request_id, short=False),
        history=break_history(side.engine, break_id),
        settled_by=() if is_open else settling_movements(side.engine, break_id),
        candidates=[
            _row(request, b, {item.source: unit} if unit else {}, now)
            for b in _partners(item, candidates)
        ],
        own_write_off_waits=stage is not None and stage.waits,
        write_off_url=mounted(request, f"breaks/{item.break_id}/write-off"),
        kept=kept,
        **_write_off_offer(item, sources, unit),
        **_working(request, user, said, refused),
    )


def _write_off_offer(item: BreakItems, sources: Sources | None, unit: Unit | None) -> dict:
    """What the page offers of a write-off: the stream it would post on (None: the source
    declares none), the adjustment it would post (None when there is nothing to adjust: it
    resolves the break at once), and whether it is offered at all (not while one posted is
    waiting for the pipeline or for reconciliation: a second would be refused)."""
    stream = (
        sources.sources[item.source].write_off
        if sources and item.source in sources.sources
        else None
    )
    return {
        "write_off_stream": stream.stream if stream is not None else None,
        "adjustment": _adjustment(item, unit),
        "write_off_offered": item.status == OPEN and not _waits(item),
    }


def _partners(item: BreakItems, candidates: Sequence[QueuedBreak]) -> list[QueuedBreak]:
    """The open breaks `item` can be matched with by hand (what `record_manual_match`
    takes): none while its own write-off waits; else those without one waiting that bring a
    side it lacks (a statement entry alone needs a ledger movement, and the other way)."""
    if _waits(item):
        return []
    return [
        other
        for other in candidates
        if not _waits(other)
        and (item.batch_id is not None or other.ledger_amount is not None)
        and (item.file_id is not None or other.statement_amount is not None)
    ]


def _waits(item: BreakItems | QueuedBreak) -> bool:
    """Whether the open break's write-off is on its way (posted or committed)."""
    stage = write_off_stage(item.write_off_request_id, item.write_off_outcome)
    return stage is not None and stage.waits


def _working(request: Request, user: BaseUser, said: str | None, refused: str | None) -> dict:
    """What every workbench page shows of the user and their work: who they are, whether
    they may work breaks, the forms' key and the match form's address, the message."""
    return {
        "user": user.get_name(),
        "can_work": may_work(user),
        "form_key": form_key(request),
        "form_key_field": FORM_KEY_FIELD,
        "match_url": mounted(request, "breaks/match"),
        "note_limit": NOTE_LIMIT,
        "said": said,
        "refused": refused,
    }


@dataclass(frozen=True)
class QueueRow:
    """An open break as a row of the queue shows it."""

    break_id: int
    url: str
    source: str
    reason: str
    account: str
    amount: str
    reference: str
    age: str
    write_off: str


def _row(request: Request, item: QueuedBreak, units: dict[str, Unit], now: datetime) -> QueueRow:
    unit = units.get(item.source)
    sides = [
        money_text(units_, unit)
        for units_ in (item.statement_amount, item.ledger_amount)
        if units_ is not None
    ]
    return QueueRow(
        break_id=item.break_id,
        url=mounted(request, f"breaks/{item.break_id}"),
        source=item.source,
        reason=reason_words(item.reason),
        account=item.account,
        amount=" vs ".join(sides),
        reference=item.statement_reference or item.request_id or "",
        age=age_words(now - item.opened_at),
        write_off=write_off_words(
            write_off_stage(item.write_off_request_id, item.write_off_outcome),
            item.write_off_request_id,
            short=True,
        ),
    )


def age_words(age: timedelta) -> str:
    """How long a break has been open, in whole days ("under a day" before the first)."""
    return "under a day" if age < timedelta(days=1) else plural(age.days, "day")


# What each stage of a write-off is called: a few words for the queue's rows, and a sentence
# for the break's page (`{request}`: the adjusting event's request id).
_WRITE_OFF_WORDS = {
    WriteOffStage.POSTED: (
        "write-off pending: waiting for the pipeline",
        "Write-off pending: the adjusting event {request} waits in the event inbox for the"
        " pipeline to commit it; the next reconciliation then settles the break.",
    ),
    WriteOffStage.APPLIED: (
        "write-off committed: waiting for reconciliation",
        "Write-off pending: the pipeline committed the adjusting event {request}; the next"
        " reconciliation settles the break.",
    ),
    WriteOffStage.REJECTED: (
        "write-off rejected by the ledger",
        "The ledger rejected the adjusting event {request}: writing the break off again posts"
        " a new one.",
    ),
    WriteOffStage.SETTLED: (
        "written off",
        "Written off: the adjusting event {request} was committed and reconciliation settled it.",
    ),
    WriteOffStage.NOTHING_TO_ADJUST: (
        "written off",
        "Written off: there was nothing to adjust.",
    ),
}


def write_off_words(stage: WriteOffStage | None, request_id: str | None, *, short: bool) -> str:
    """Where a break's write-off stands (`stage`), in a few words (`short`, for the queue) or
    a sentence (for the break's page); empty for a break with none."""
    if stage is None:
        return ""
    few, sentence = _WRITE_OFF_WORDS[stage]
    return few if short else sentence.format(request=request_id)


def _adjustment(item: BreakItems, unit: Unit | None) -> str | None:
    """The amount a write-off of the open break would post, as money; None when resolved or
    when there is nothing to adjust (a duplicate: the write-off resolves it at once)."""
    if item.status != OPEN:
        return None
    amount = adjustment_amount(item.reason, item.statement_amount, item.ledger_amount)
    if amount == 0:
        return None
    return money_text(amount, unit) if amount < 0 else "+" + money_text(amount, unit)


def _whole_days(text: str) -> int:
    """The filter's days, a whole number from 0; else the request is refused (400)."""
    if not text.isdigit():  # digits only: no sign, no space
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST, f"min_age_days: whole days from 0, not {text!r}"
        )
    return int(text)
