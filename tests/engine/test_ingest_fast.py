"""`parse_line` reads most lines with `msgspec`; whatever the line, its verdict is the one
`parse_line_fully` (the `json` module's reading) gives: the same event, or the same sentence.

Generated lines cover what the shortcut must notice: a key repeated at any depth, floats,
integers at and beyond int64, escapes, nesting at and beyond the limit, non-ASCII text,
byte order marks, lines cut short, extra or missing envelope fields, and random bytes.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger_engine.core.ingest import MAX_LINE_NESTING, parse_line, parse_line_fully
from ledger_engine.core.records import Event

INT64 = 2**63
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-INT64 - 3, INT64 + 3),
    st.integers(-(10**30), 10**30),
    st.sampled_from([-INT64, INT64 - 1, 0, -0]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.text(alphabet='ab"\\é\u2028\x7f', max_size=6),
)
KEYS = st.text(alphabet='abc"\\é ', min_size=0, max_size=4)
# What most lines hold: text without escapes, integers in int64, booleans, null.
PLAIN = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-INT64, INT64 - 1),
    st.text(alphabet="xyz é\u2028", max_size=4),
)


def _json_values(depth: int) -> st.SearchStrategy:
    return st.recursive(
        SCALARS,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)
        ),
        max_leaves=depth,
    )


def _object_text(pairs: list[tuple[str, str]]) -> str:
    """An object's text from (key, value text) pairs: a key may come twice."""
    return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{v}" for k, v in pairs) + "}"


@st.composite
def payload_texts(draw: st.DrawFn) -> str:
    """A payload object's text (of plain values, or of any), sometimes repeating a key."""
    plain = st.recursive(PLAIN, lambda inner: st.lists(inner, max_size=2), max_leaves=4)
    value = draw(
        st.one_of(
            st.dictionaries(st.text(alphabet="abc", max_size=3), plain, max_size=5),
            st.dictionaries(KEYS, _json_values(8), max_size=5),
        )
    )
    pairs = [(k, json.dumps(v, ensure_ascii=draw(st.booleans()))) for k, v in value.items()]
    if pairs and draw(st.booleans()):
        key, _ = draw(st.sampled_from(pairs))
        pairs.insert(draw(st.integers(0, len(pairs))), (key, json.dumps(draw(SCALARS))))
    return _object_text(pairs)


@st.composite
def nested_texts(draw: st.DrawFn) -> str:
    """A payload nesting arrays and objects about as deep as the limit."""
    depth = draw(st.integers(MAX_LINE_NESTING - 3, MAX_LINE_NESTING + 1))
    text = json.dumps(draw(SCALARS))
    for _ in range(depth):
        text = f"[{text}]" if draw(st.booleans()) else f'{{"k":{text}}}'
    return text


@st.composite
def lines(draw: st.DrawFn) -> bytes:
    """A line as a file may hold one: an envelope (well formed or not), or any bytes."""
    kind = draw(st.sampled_from(["envelope", "envelope", "envelope", "nested", "bytes"]))
    if kind == "bytes":
        return draw(st.binary(max_size=40))
    payload = draw(payload_texts()) if kind == "envelope" else draw(nested_texts())
    fields = [
        ("stream", json.dumps(draw(st.sampled_from(["transfers", "é", 5, None])))),
        ("request_id", json.dumps(draw(st.one_of(st.text(max_size=6), st.integers(0, 9))))),
        ("payload", payload),
    ]
    if draw(st.booleans()):
        fields = draw(st.permutations(fields))
    change = draw(st.sampled_from(["none", "none", "drop", "extra", "repeat"]))
    if change == "drop":
        fields.pop(draw(st.integers(0, 2)))
    elif change == "extra":
        fields.append(("other", "1"))
    elif change == "repeat":
        fields.append(draw(st.sampled_from(fields)))
    raw = _object_text(fields).encode("utf-8")
    if draw(st.integers(0, 9)) == 0:
        raw = raw[: draw(st.integers(0, len(raw)))]  # cut short
    if draw(st.integers(0, 9)) == 0:
        raw = "\ufeff".encode() + raw
    return raw


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(lines())
def test_the_fast_reading_gives_every_line_the_full_readings_verdict(raw: bytes) -> None:
    assert parse_line(raw) == parse_line_fully(raw)


def test_a_repeated_key_is_refused_at_any_depth() -> None:
    for raw in (
        b'{"stream":"s","request_id":"r","payload":{"a":1,"a":2}}',
        b'{"stream":"s","stream":"s","request_id":"r","payload":{}}',
        b'{"stream":"s","request_id":"r","payload":{"a":[{"b":"x","b":"x"}]}}',
    ):
        verdict = parse_line(raw)
        assert isinstance(verdict, str) and "repeats the key" in verdict, raw


def test_a_plain_line_is_read_as_the_event_it_holds() -> None:
    raw = b'{"stream":"transfers","request_id":"r-1","payload":{"amount":5,"to":"a","ok":true}}'
    assert parse_line(raw) == Event("transfers", "r-1", {"amount": 5, "to": "a", "ok": True})
