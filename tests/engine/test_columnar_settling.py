"""Settling a deferred row's adds over columns gives every add its before and after values as
a running sum from the row's value before the batch, and reports the row whose running total
leaves int64, wherever the totals lie (the NumPy path far from the bounds, the exact walk near
them)."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger_engine import AccessType
from ledger_engine.core.records import INT64_MAX, INT64_MIN
from ledger_engine.runtime.columnar.executing import PENDING_SCHEMA
from ledger_engine.runtime.columnar.settling import settle_pending
from tests.support import generated_apps

LEDGER = generated_apps.build_ledger(
    generated_apps.AppSpec(
        tables=(generated_apps.TableSpec("t0", str, int),),
        streams=((generated_apps.BindingSpec(0, "fee", AccessType.ADD),),),
    )
)


class Rows:
    """The row source of one row's value before the batch (None: absent)."""

    def __init__(self, base: int | None) -> None:
        self.base = base

    def open(self) -> None: ...

    def close(self) -> None: ...

    def read(self, round_, table, keys):
        return {} if self.base is None else {key: self.base for key in keys}

    def in_memory(self, table):
        return None


def pending(deltas: list[int]) -> pa.Table:
    """One add per transaction to row `r0` of table 0, at positions 0, 1, ..."""
    return pa.table(
        {
            "table": [0] * len(deltas),
            "key": ["r0"] * len(deltas),
            "position": list(range(len(deltas))),
            "seq": [0] * len(deltas),
            "request_id": [f"q{i}" for i in range(len(deltas))],
            "delta": deltas,
            "low": [min(d, 0) for d in deltas],
            "high": [max(d, 0) for d in deltas],
            "wide": [None] * len(deltas),
        },
        schema=PENDING_SCHEMA,
    )


def expected(base: int | None, deltas: list[int]) -> list[tuple[int | None, int]] | None:
    """(before, after) of each add, or None if a running total leaves int64."""
    value, found = base, []
    for delta in deltas:
        after = (value or 0) + delta
        if not INT64_MIN <= after <= INT64_MAX:
            return None
        found.append((value, after))
        value = after
    return found


BIG = st.sampled_from([2**62, -(2**62), 2**63 - 1, -(2**63), 2**61 + 3])
DELTAS = st.lists(st.one_of(st.integers(-1_000, 1_000), BIG), min_size=1, max_size=8)


@settings(max_examples=300)
@given(st.one_of(st.none(), st.integers(-1_000, 1_000), BIG), DELTAS)
def test_every_add_gets_its_running_total_or_the_row_overflows(base, deltas) -> None:
    settled, overflowed = settle_pending(LEDGER, pending(deltas), Rows(base))
    want = expected(base, deltas)
    if want is None:
        assert overflowed.to_pylist() == [{"table": 0, "key": "r0"}]
        assert len(settled) == 0
    else:
        assert len(overflowed) == 0
        rows = settled.sort_by("position").to_pylist()
        assert [(r["before"], r["after"]) for r in rows] == want


def test_deltas_whose_magnitudes_sum_past_int64_settle_exactly() -> None:
    deltas = [2**62, -(2**62)] * 3  # |delta| sums to 6 * 2**62, the totals stay small
    settled, overflowed = settle_pending(LEDGER, pending(deltas), Rows(64))
    assert len(overflowed) == 0
    assert settled.sort_by("position").column("after").to_pylist() == [2**62 + 64, 64] * 3
