"""Settling deferred adds: the before and after values of rows the batch only added to.

A deferred row is never read during the batch (`ledger_engine.runtime.parallel.plan`), so each
transaction only recorded the sum of its deltas (`PendingAdd`). Settling walks each row's pending
adds in batch order from the row's value before the batch and gives every one its `Change`, exactly
as the serial runner would have recorded it.

One thing the serial runner checks depends on the row's value: the int64 range of the running
total after every single add. `PendingAdd` carries the lowest and highest running total of its
transaction's deltas, so the check here is exact. If it fails, the deferral was a wrong guess:
the serial runner would have rejected that transaction with `overflow`. Settling then reports
the row, and the caller plans the batch again with the row ordered, which makes the
transaction's add run against the real value and fail the way it must.

The same holds for a transaction that added to a deferred row and was then rejected for
another reason (`transaction.execute`): its *probe* (at seq `PROBE`) is checked against the
row's running total at its place, and changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ledger_engine.core.records import INT64_MAX, INT64_MIN, Change
from ledger_engine.core.transaction import PendingAdd, RowKey

# The seq of a probe: a rejected transaction has no changes, so no seq of its own.
PROBE = -1


@dataclass(frozen=True, slots=True)
class Pending:
    """A pending add at (`position`, `seq`) of the batch: its transaction and its place among
    the transaction's changes."""

    position: int
    seq: int
    add: PendingAdd

    @property
    def row(self) -> RowKey:
        return (self.add.table, self.add.key)


@dataclass(frozen=True, slots=True)
class Settled:
    """The `Change` a pending add turned into, at (`position`, `seq`)."""

    position: int
    seq: int
    change: Change


class Overflow(Exception):
    """Deferring these rows was wrong: a running total leaves the int64 range."""

    def __init__(self, rows: set[RowKey]) -> None:
        super().__init__(f"deferred adds overflow int64 on {len(rows)} row(s)")
        self.rows = rows


def settle_row(base: Any, pending: Iterable[Pending]) -> Iterator[Settled]:
    """The changes of one row's pending adds, in batch order, starting from `base` (`None` for
    an absent row). Raises `Overflow` if a running total leaves the int64 range."""
    value = base
    last = -1
    for item in pending:
        assert item.position > last, "a row's pending adds are settled in batch order"
        last = item.position
        start = 0 if value is None else value
        add = item.add
        if start + add.low < INT64_MIN or start + add.high > INT64_MAX:
            raise Overflow({item.row})
        if item.seq == PROBE:
            assert add.delta == 0, "a probe's transaction was rejected: it adds nothing"
            continue
        after = start + add.delta
        change = Change(add.request_id, add.table, add.key, value, after)
        yield Settled(item.position, item.seq, change)
        value = after


def settle(
    pending: Iterable[Pending], base: Mapping[RowKey, Any]
) -> tuple[list[Settled], dict[RowKey, Any]]:
    """Settle every pending add; returns the changes and each row's value after the batch.

    `base` holds every deferred row's value before the batch (`None` for an absent row).
    Raises `Overflow` naming every row whose running total leaves the int64 range.
    """
    by_row: dict[RowKey, list[Pending]] = {}
    for item in pending:
        by_row.setdefault(item.row, []).append(item)
    settled: list[Settled] = []
    final: dict[RowKey, Any] = {}
    overflowed: set[RowKey] = set()
    for row, items in by_row.items():
        items.sort(key=lambda p: p.position)
        try:
            changes = list(settle_row(base[row], items))
        except Overflow:
            overflowed.add(row)
            continue
        settled.extend(changes)
        if changes:  # a row of probes alone keeps its value
            final[row] = changes[-1].change.after
    if overflowed:
        raise Overflow(overflowed)
    return settled, final
