"""Working breaks to closure by hand: `ledger breaks match` and `ledger breaks write-off`.

A *manual match* pairs the items of open breaks that no rule could (a payment booked under
another reference, a fee netted by the bank): one match, made by a person with a note,
resolves them all (`reconcile.storage.resolutions.record_manual_match`).

A *write-off* makes the ledger agree with the statement by an adjusting event through the
ledger itself (`write_offs` says which amount, and how a later run settles it): the posting is
recorded in the break's history first, then the event is landed in the event inbox, where the
next pipeline run commits it like any other event. Landing after the commit means a crash in
between leaves a posting without its file; writing the break off again lands the very same
event (same request id), so nothing is posted twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sqlalchemy import Engine

from ledger_engine.core.records import Event
from ledger_engine.pipeline.event_inbox import write_event_files
from ledger_engine.reconcile.sources import Sources, WriteOffStream
from ledger_engine.reconcile.storage.resolutions import (
    WriteOffPosting,
    record_manual_match,
    record_write_off,
)

DESCRIPTION_LIMIT = 500  # characters of the note an adjusting event carries (the bank's limit)


def manual_match(engine: Engine, break_ids: Sequence[int], *, who: str, note: str) -> int:
    """Match the items of the open breaks `break_ids` by hand; the match id (raises
    `ResolutionRefused` saying why they may not be matched)."""
    return record_manual_match(engine, break_ids, who=who, note=note)


def write_off(
    engine: Engine, sources: Sources, inbox: Path, break_id: int, *, who: str, note: str
) -> WriteOffPosting:
    """Write the open break `break_id` off: record the posting, then land its adjusting event
    in the event inbox `inbox` (see the module)."""
    streams = {name: s.write_off for name, s in sources.sources.items() if s.write_off}
    posting = record_write_off(engine, break_id, who=who, note=note, sources=set(streams))
    if posting.request_id is None:
        return posting  # nothing to adjust: resolved at once
    event = adjusting_event(streams[posting.source], posting)
    write_event_files([event], inbox, prefix=posting.request_id)
    return posting


def adjusting_event(stream: WriteOffStream, posting: WriteOffPosting) -> Event:
    """The event that posts `posting`'s adjustment on the source's write-off stream."""
    assert posting.request_id is not None and posting.amount != 0, posting
    payload: dict[str, object] = {
        stream.account_field: posting.account,
        stream.amount_field: posting.amount,
    }
    if stream.reference_field is not None:
        payload[stream.reference_field] = posting.request_id
    if stream.description_field is not None:
        payload[stream.description_field] = f"write-off: {posting.note}"[:DESCRIPTION_LIMIT]
    return Event(stream.stream, posting.request_id, payload)
