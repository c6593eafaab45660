"""What the event log keeps of an event is written by the staging and predicted by the audit's
replay, with code of each side's own (`store.staging`, `audit.rederivation.stored_form`): both
must agree on every event a line can carry, hostile ones first."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from ledger_engine.audit.rederivation import stored_form
from ledger_engine.core.records import Event
from ledger_engine.store import staging

ANY_TEXT = st.text(st.characters(), max_size=12)  # lone surrogates and NUL included
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | ANY_TEXT
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ANY_TEXT, inner, max_size=3),
    max_leaves=8,
)


@given(VALUES)
def test_a_stream_is_kept_alike(stream):
    assert stored_form.stored_text(stream) == staging.clean_text(stream)


@given(VALUES)
def test_a_request_id_is_kept_alike(request_id):
    assert stored_form.stored_request_id(request_id) == staging.request_id_of(request_id)


@given(VALUES)
def test_a_payload_is_kept_or_dropped_alike(payload):
    event = Event("s", "r", payload)
    kept = staging.payload_of(event)
    predicted = stored_form.stored_payload(event)
    assert (kept is None) == (predicted is None)
    if kept is not None:  # what the staging wrote, read back as jsonb reads it
        assert stored_form.same_json(predicted, stored_form.jsonb_form(json.loads(kept)))
