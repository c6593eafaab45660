"""The engine's fast fingerprint (and Merkle leaf) is the reference one, byte for byte.

`core.records.plain_canonical_hash` (msgspec) hashes what `core.storable.plain_json`
accepts; the reference is `core.records.canonical_hash` (Python's json module), which the
audits use to recompute stored fingerprints. A difference would make a retry look like a
clash, or the audits find a fingerprint they cannot reproduce.
"""

from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

from ledger_engine.core.records import (
    INT64_MAX,
    INT64_MIN,
    canonical_hash,
    canonical_json,
    plain_canonical_hash,
)
from ledger_engine.core.storable import plain_flat_copy, plain_json
from ledger_engine.store import merkle
from ledger_engine.store.merkle import BUCKET_BITS

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


def _reference_leaf(key, value) -> int:
    row = canonical_json([key, value]).encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.sha256(row).digest(), "big")


def _reference_bucket(key) -> int:
    digest = hashlib.sha256(canonical_json(key).encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:2], "big") >> (16 - BUCKET_BITS)


KEYS = ASCII | st.text(max_size=8) | st.integers() | st.booleans()


@settings(max_examples=400, deadline=None)
@given(KEYS, ANY_JSON)
def test_merkle_leaves_and_buckets_are_those_of_the_canonical_json(key, value):
    """The leaf and bucket encode keys and ints without the JSON encoder where they can."""
    assert merkle.leaf(key, value) == _reference_leaf(key, value)
    assert merkle.bucket_of(key) == _reference_bucket(key)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(KEYS, st.none() | ANY_JSON, st.none() | ANY_JSON), max_size=12))
def test_bucket_deltas_sum_each_rows_change_delta(changes):
    expected: dict[int, int] = {}
    for key, before, after in changes:
        bucket, delta = merkle.change_delta(key, before, after)
        assert bucket == _reference_bucket(key)
        reference = (after is not None and _reference_leaf(key, after)) - (
            before is not None and _reference_leaf(key, before)
        )
        assert delta == reference % merkle.MODULUS
        expected[bucket] = (expected.get(bucket, 0) + delta) % merkle.MODULUS
    assert merkle.bucket_deltas(changes) == expected


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.text(max_size=4), ANY_JSON, max_size=6))
def test_the_one_pass_copy_of_a_result_takes_only_flat_plain_objects(value):
    copy = plain_flat_copy(value)
    flat = all(not isinstance(v, dict | list) for v in value.values())
    if copy is None:
        assert not (flat and plain_json(value))
    else:
        assert flat and plain_json(value)
        assert copy == value and copy is not value
