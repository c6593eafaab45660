"""What can be decided about an event before any row is read: admission.

An event ends before its transaction runs when its request id is invalid (`invalid_event`), when
its request id was seen before (a duplicate), or when its stream, payload or keys are unusable
(`invalid_event`, `bad_key`, `type_error`, `overflow`). All of it depends only on the event and
on the request ids before it, never on table state; so a parallel runner can screen events on
many workers and settle duplicates by grouping on request id, while the serial runner does the
same steps one event at a time.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any, NamedTuple

from ledger_engine.core.declarations import Stream
from ledger_engine.core.records import (
    EXISTS,
    EXISTS_WITH_DIFFERENT_PAYLOAD,
    INVALID_EVENT,
    Duplicate,
    Event,
    Rejection,
    canonical_hash,
    plain_canonical_hash,
    record,
)
from ledger_engine.core.storable import (
    MAX_ID_BYTES,
    Problem,
    brief,
    json_problem,
    json_text_problem,
    json_type,
    plain_json,
    short_text,
    storable_text,
)
from ledger_engine.core.transaction import resolve_keys

INVALID_REQUEST_ID = (
    f"request_id must be a non-empty string of at most {MAX_ID_BYTES} bytes, "
    "without NUL or lone surrogates"
)


def valid_request_id(request_id: Any) -> bool:
    """A request id is a non-empty string PostgreSQL can store and index."""
    if type(request_id) is str and request_id.isascii():  # the common case, checked at once
        return 0 < len(request_id) <= MAX_ID_BYTES and "\x00" not in request_id
    return (
        isinstance(request_id, str)
        and bool(request_id)
        and storable_text(request_id)
        and short_text(request_id)
    )


class Screened(NamedTuple):
    """An event after the checks that need no other event.

    `request_id` is `None` when the event has no valid request id: it is then rejected with
    `rejection` and takes part in no deduplication. Otherwise the event is a duplicate if its
    request id came before; if not, it is rejected with `rejection` when that is set, and runs
    `stream` with `keys` when it is not. (A named tuple: one is made per event, and a frozen
    dataclass costs several times as much to build; `admit` asserts the invariant.)
    """

    request_id: str | None
    # Of stream and payload; "" without a valid request id; `None` when the caller left it to
    # be worked out if needed (a plain event's: `plain_fingerprint`).
    fingerprint: str | None
    rejection: Rejection | None
    stream: Stream | None = None
    keys: tuple[Any, ...] | None = None


def screen(streams: Mapping[str, Stream], event: Event, fingerprinted: bool = True) -> Screened:
    """Check `event` on its own: request id, stream, payload and keys.

    Without `fingerprinted`, a plain event's fingerprint is left to `plain_fingerprint`: a
    runner that only compares fingerprints of duplicates need not hash every event.
    """
    rid = event.request_id
    if not valid_request_id(rid):
        return Screened(None, "", Rejection(event.stream, rid, INVALID_EVENT, INVALID_REQUEST_ID))
    payload = event.payload
    fingerprint: str | None
    if type(event.stream) is str and plain_json(payload):  # the common case: hashed fast
        payload_problem = None
        fingerprint = plain_fingerprint(event) if fingerprinted else None
    else:
        payload_problem = json_problem(payload, "payload")
        unencodable = _unencodable(event, payload_problem)
        if unencodable is not None:
            # Not to be encoded, so neither hashed nor shown: its fingerprint says only what
            # is wrong with it (a file's line never gets here: `ingest.parse_line` refuses it
            # first).
            stream = event.stream if isinstance(event.stream, str) else None
            rejection = Rejection(stream, rid, INVALID_EVENT, unencodable.detail)
            return Screened(rid, canonical_hash(["unencodable", unencodable.detail]), rejection)
        fingerprint = event.fingerprint()
    stream = streams.get(event.stream) if isinstance(event.stream, str) else None
    if stream is None:
        rejection = Rejection(event.stream, rid, INVALID_EVENT, _unknown_stream(event.stream))
        return Screened(rid, fingerprint, rejection)
    if not isinstance(payload, dict):
        kind = json_type(payload)
        rejection = Rejection(
            event.stream, rid, INVALID_EVENT, f"payload must be an object, not {kind}"
        )
        return Screened(rid, fingerprint, rejection)
    if payload_problem is not None:
        return Screened(
            rid, fingerprint, Rejection(event.stream, rid, INVALID_EVENT, payload_problem.detail)
        )
    if stream.fields is not None:
        detail = stream.fields.problem(payload)
        if detail is not None:
            return Screened(rid, fingerprint, Rejection(event.stream, rid, INVALID_EVENT, detail))
    keys = resolve_keys(stream, payload)
    if isinstance(keys, Problem):
        return Screened(rid, fingerprint, Rejection(event.stream, rid, keys.reason, keys.detail))
    return record(Screened, (rid, fingerprint, None, stream, tuple(keys)))


def plain_fingerprint(event: Event) -> str:
    """The fingerprint of an event whose stream is text and whose payload is plain JSON."""
    return plain_canonical_hash([event.stream, event.payload])


def _unencodable(event: Event, payload_problem: Problem | None) -> Problem | None:
    """Why the event's stream or payload cannot be encoded (to fingerprint it), if so."""
    stream_problem = json_text_problem(event.stream, "stream")
    if stream_problem is not None or payload_problem is None:
        return stream_problem
    return json_text_problem(event.payload, "payload")


def _unknown_stream(stream: Any) -> str:
    if stream is None:
        return "no stream given (stream is missing or null)"
    if not isinstance(stream, str):
        return f"stream must be a stream name, not {json_type(stream)} {brief(stream)}"
    return f"unknown stream {brief(stream)}"


def duplicate_kind(fingerprint: str, first_fingerprint: str) -> str:
    """`exists` for a retry of the first event of a request id, else a clash."""
    return EXISTS if fingerprint == first_fingerprint else EXISTS_WITH_DIFFERENT_PAYLOAD


# What `admit` remembers of a request id: its event's fingerprint, or the event itself when
# that was left to be worked out (a plain event's: `plain_fingerprint`).
Seen = MutableMapping[str, str | Event]


def remembered_fingerprint(remembered: str | Event) -> str:
    """The fingerprint of what `Seen` remembers of a request id."""
    return remembered if type(remembered) is str else plain_fingerprint(remembered)


def duplicate(event: Event, screened: Screened, first: str | Event) -> Duplicate:
    """`event`, whose request id came before in `first` (what `Seen` remembers of it)."""
    assert screened.request_id is not None
    fingerprint = screened.fingerprint
    if fingerprint is None:
        fingerprint = plain_fingerprint(event)
    kind = duplicate_kind(fingerprint, remembered_fingerprint(first))
    return Duplicate(event.stream, screened.request_id, kind)


def admit(
    streams: Mapping[str, Stream], event: Event, seen: Seen
) -> Screened | Rejection | Duplicate:
    """Decide whether `event` runs: its screening, or why it is rejected or a duplicate.

    A request id is remembered (in `seen`) as soon as it is admitted or rejected here, so that
    a retry of a rejected event is a duplicate too. Fingerprints are worked out only for
    duplicates: nothing else needs them here.
    """
    screened = screen(streams, event, fingerprinted=False)
    rid = screened.request_id
    assert (screened.rejection is None) == (screened.keys is not None), screened
    if rid is None:
        assert screened.rejection is not None
        return screened.rejection
    first = seen.get(rid)
    if first is not None:
        return duplicate(event, screened, first)
    fingerprint = screened.fingerprint
    seen[rid] = event if fingerprint is None else fingerprint
    return screened.rejection or screened


def admit_batch(
    streams: Mapping[str, Stream], events: Sequence[Event], known: Mapping[str, str]
) -> list[Screened | Rejection | Duplicate]:
    """`admit` for every event of a batch, after the request ids `known` from earlier runs."""
    seen: Seen = dict(known)
    return [admit(streams, event, seen) for event in events]
