"""`bucket_deltas_of_columns(keys, before, after)` is `bucket_deltas` of the columns' rows:
the same buckets with the same deltas, in the same order, whatever the keys and values.

Generated columns cover what the columnar encoding must notice: text keys and values that
JSON writes with escapes (quotes, backslashes, control characters, non-ASCII, the empty
string), int keys and values over all of int64, absent rows (nulls) before or after or both,
keys repeated, text columns of each Arrow string type, and columns in several chunks.
"""

from __future__ import annotations

import itertools
import re

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger_engine.store.merkle import MODULUS, bucket_deltas, bucket_deltas_of_columns

INT64 = st.integers(-(2**63), 2**63 - 1)
TEXT = st.one_of(
    st.text(st.characters(exclude_categories=("Cs",)), max_size=8),  # no lone surrogates
    st.text(alphabet='a"\\\x00\x1f\x7f é\u2028€😀', max_size=4),
    st.from_regex(r"acct-[0-9]{1,6}", fullmatch=True),  # what most keys look like
)
TEXT_TYPES = st.sampled_from([pa.string(), pa.large_string(), pa.string_view()])


@st.composite
def column_types(draw: st.DrawFn, *, of_values: bool) -> tuple[pa.DataType, st.SearchStrategy]:
    """An Arrow type of keys (text or int64) or of values (also null: all absent), and a
    strategy for its Python values."""
    kinds = ["text", "int64", "null"] if of_values else ["text", "int64"]
    kind = draw(st.sampled_from(kinds))
    if kind == "text":
        return draw(TEXT_TYPES), TEXT
    if kind == "int64":
        return pa.int64(), INT64
    return pa.null(), st.none()


def _column(draw: st.DrawFn, values: list, kind: pa.DataType) -> pa.Array | pa.ChunkedArray:
    """`values` as one array, or as a chunked array cut at drawn places (chunks may be empty)."""
    if not draw(st.booleans()):
        return pa.array(values, kind)
    cuts = sorted(draw(st.lists(st.integers(0, len(values)), max_size=3)))
    bounds = [0, *cuts, len(values)]
    return pa.chunked_array(
        [pa.array(values[a:b], kind) for a, b in itertools.pairwise(bounds)], kind
    )


@st.composite
def changes(draw: st.DrawFn) -> tuple[pa.Array | pa.ChunkedArray, ...]:
    """(keys, before, after) columns of a batch's changed rows."""
    rows = draw(st.integers(0, 25))
    key_type, key = draw(column_types(of_values=False))
    # Keys drawn from a pool smaller than the rows repeat; the pool may hold a null key.
    pool = draw(st.lists(key | st.none() if draw(st.booleans()) else key, min_size=1, max_size=12))
    keys = draw(st.lists(st.sampled_from(pool), min_size=rows, max_size=rows))
    columns = [_column(draw, keys, key_type)]
    for _ in ("before", "after"):
        value_type, value = draw(column_types(of_values=True))
        values = draw(st.lists(st.none() | value, min_size=rows, max_size=rows))
        columns.append(_column(draw, values, value_type))
    return tuple(columns)


def _reference(keys: pa.Array, before: pa.Array, after: pa.Array) -> list[tuple[int, int]]:
    """`bucket_deltas` of the columns' Python values, as (bucket, delta) in its order."""
    rows = zip(keys.to_pylist(), before.to_pylist(), after.to_pylist(), strict=True)
    return list(bucket_deltas(rows).items())


@settings(max_examples=400)
@given(changes())
def test_the_columns_give_bucket_deltas_of_their_rows(
    columns: tuple[pa.Array | pa.ChunkedArray, ...],
) -> None:
    """Whatever the keys and values, the columns' deltas are their rows' deltas, bucket for
    bucket, in the order `bucket_deltas` gives them."""
    assert list(bucket_deltas_of_columns(*columns).items()) == _reference(*columns)


def test_a_bucket_of_many_rows_sums_its_leaves_modulo_2_256() -> None:
    """Thousands of leaves in one bucket (one key, rewritten) sum as Python's ints do, then
    modulo 2**256; and a batch shaped like the bank's (accounts, int64 balances) too."""
    rows = 5000
    keys = pa.array(["acct-000001"] * rows)
    before = pa.array(range(rows), pa.int64())
    after = pa.array([None] * (rows // 2) + [2**63 - 1 - i for i in range(rows // 2)], pa.int64())
    deltas = bucket_deltas_of_columns(keys, before, after)
    assert list(deltas.items()) == _reference(keys, before, after)
    assert len(deltas) == 1 and 0 <= next(iter(deltas.values())) < MODULUS

    accounts = pa.array([f"acct-{i * 7919 % 10**6:06d}" for i in range(20_000)])
    balances = pa.array([(i * 2654435761) % 2**40 - 2**39 for i in range(20_000)], pa.int64())
    moved = pa.array([None if i % 5 == 0 else i - 10**9 for i in range(20_000)], pa.int64())
    deltas = bucket_deltas_of_columns(accounts, balances, moved)
    assert list(deltas.items()) == _reference(accounts, balances, moved)


def test_a_row_absent_before_and_after_still_names_its_bucket() -> None:
    """As in `bucket_deltas`, a key whose row is absent on both sides has its bucket in the
    result, with delta 0; no rows, no buckets."""
    keys, absent = pa.array(["a", "b"]), pa.nulls(2, pa.int64())
    assert list(bucket_deltas_of_columns(keys, absent, absent).values()) == [0, 0]
    assert bucket_deltas_of_columns(keys, absent, absent) == bucket_deltas(
        [("a", None, None), ("b", None, None)]
    )
    empty = pa.array([], pa.int64())
    assert bucket_deltas_of_columns(pa.array([], pa.string()), empty, empty) == {}


@pytest.mark.parametrize(
    ("keys", "values", "refusal"),
    [
        (
            pa.array(["a"]),
            pa.array([b"\x80\x04K\x01."], pa.binary()),  # a pickle
            "before must be an int64 or string column, not binary",
        ),
        (pa.array(["a"]), pa.array([1.5]), "before must be an int64 or string column, not double"),
        (
            pa.array(["a"]),
            pa.array([1], pa.int32()),
            "before must be an int64 or string column, not int32",
        ),
        (
            pa.array([b"a"], pa.binary()),
            pa.array([1]),
            "keys must be a string or int64 column, not binary",
        ),
        (pa.array([1.0]), pa.array([1]), "keys must be a string or int64 column, not double"),
    ],
)
def test_columns_of_other_types_are_refused(keys: pa.Array, values: pa.Array, refusal: str) -> None:
    """Keys other than text or int64, and values other than text, int64 or null, are a
    TypeError: their Python values may not be what the caller means (pickles, say), so they
    are the caller's to decode and give to `bucket_deltas`."""
    with pytest.raises(TypeError, match=f"^{re.escape(refusal)}$"):
        bucket_deltas_of_columns(keys, values, values)


def test_columns_of_different_lengths_are_refused() -> None:
    """The three columns are one table's: they have as many rows each."""
    with pytest.raises(ValueError, match="differ in length"):
        bucket_deltas_of_columns(pa.array(["a", "b"]), pa.array([1, 2]), pa.array([1]))
