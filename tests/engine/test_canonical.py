"""The engine's fast fingerprint is the reference fingerprint, byte for byte.

`model.plain_canonical_hash` (msgspec) hashes what `values.plain_json` accepts; the reference
is `model.canonical_hash` (Python's json module), which the audits use to recompute stored
fingerprints. A difference would make a retry look like a clash, or the audits find a
fingerprint they cannot reproduce.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ledger_engine.model import INT64_MAX, INT64_MIN, canonical_hash, plain_canonical_hash
from ledger_engine.values import plain_json

# Printable ASCII and every control character: what JSON escapes, and what it does not.
ASCII = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=127), max_size=12)
SCALARS = st.none() | st.booleans() | st.integers(INT64_MIN, INT64_MAX) | ASCII
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ASCII, inner, max_size=4),
    max_leaves=20,
)
ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(ASCII, VALUES)
def test_a_plain_event_hashes_to_the_reference_fingerprint(stream, payload):
    value = [stream, payload]
    if plain_json(value):
        assert plain_canonical_hash(value) == canonical_hash(value)


@settings(max_examples=400, deadline=None)
@given(ANY_JSON)
def test_plain_json_accepts_only_values_the_fast_encoder_writes_exactly(value):
    if plain_json(value):
        assert plain_canonical_hash(value) == canonical_hash(value)


def test_plain_json_refuses_what_the_fast_encoder_writes_differently():
    assert not plain_json({"amount": 1e16})  # Python writes 1e+16, msgspec 1e16
    assert not plain_json({"amount": 2**63})  # beyond int64
    assert not plain_json({"note": "caf\u00e9"})  # non-ASCII goes the reference way
    assert not plain_json({"note": "a\x00b"})  # PostgreSQL text holds no NUL
    assert plain_json({"note": 'tab\tquote"slash\\', "n": -(2**63), "ok": True, "x": None})
