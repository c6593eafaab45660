"""A line is "cut short" exactly when more bytes could still make it JSON, and "not valid JSON"
when its syntax breaks before its end: judged here from texts Python's json module wrote,
cut at every byte (each cut is the start of JSON, so cut short), or with a control character
put in at every place (JSON allows one nowhere, in a string neither, so no line holding one is
the start of JSON, wherever it stands)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ledger_engine.core.ingest import CUT_SHORT, parse_line

KEYS = st.text(max_size=3)
# Texts of arrays and objects, of every kind of JSON value: escapes, non-ASCII text, numbers
# with fractions and exponents, literals.
VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet='a"\\é€😀\x1f/', max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=8,
)
CONTAINERS = st.lists(VALUES, max_size=3) | st.dictionaries(KEYS, VALUES, max_size=3)
STYLES = st.sampled_from([(",", ":"), (", ", ": ")])


@settings(deadline=None)  # a line's every cut: its time grows with its length squared
@given(value=CONTAINERS, separators=STYLES, ascii_only=st.booleans())
def test_every_cut_of_an_array_or_object_is_cut_short(value, separators, ascii_only):
    raw = json.dumps(value, separators=separators, ensure_ascii=ascii_only).encode()
    for end in range(1, len(raw)):
        assert parse_line(raw[:end]) == CUT_SHORT, raw[:end]


@settings(deadline=None)
@given(value=CONTAINERS, separators=STYLES, data=st.data())
def test_a_line_broken_before_its_end_is_not_valid_json_wherever_the_break(value, separators, data):
    text = json.dumps(value, separators=separators, ensure_ascii=False)
    at = data.draw(st.integers(0, len(text) - 1), label="break at")
    before = text[:at].encode()
    broken = before + b"\x01" + text[at:].encode()
    for end in range(len(before) + 1, len(broken) + 1):  # every line holding the break
        problem = parse_line(broken[:end])
        assert problem != CUT_SHORT, broken[:end]
        assert isinstance(problem, str) and problem.startswith("line is not valid"), problem
