"""Routing a batch's stored events to the slots of its plan.

The driver broadcasts the plan as arrays (`RoutingPlan`, a few bytes per event); each task
that holds screened events (`screening.EVENTS_SCHEMA`) cuts them into one table per slot, in
batch order, each event with what its executing task needs besides the event: the bitmask of
its deferred bindings and, per binding, where the row goes after the round (`carry`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ledger_engine.runtime.columnar.admission import positions_of

ROUTED_SCHEMA = pa.schema(
    [
        ("position", pa.int64()),
        ("event", pa.binary()),
        ("deferred", pa.int64()),  # bit i: binding i's row is deferred
        ("carry", pa.list_(pa.int32())),  # per binding: the slot its row goes to next, or -1
    ]
)


@dataclass(frozen=True)
class RoutingPlan:
    """The plan as routing reads it.

    `offsets`: each unit's first position (`admission.unit_offsets`); `txn_of[p]`: the index
    among the runnable events of position `p`, -1 if it does not run; per runnable event its
    `slot` and `deferred` mask; `access_start[t]`: where its accesses start in `carry` (one
    entry per binding, with the batch's size at the end).
    """

    offsets: np.ndarray
    txn_of: np.ndarray
    slot: np.ndarray
    deferred: np.ndarray
    access_start: np.ndarray
    carry: np.ndarray

    def __post_init__(self) -> None:
        assert len(self.slot) == len(self.deferred) == len(self.access_start) - 1
        assert self.access_start[-1] == len(self.carry)


def routed_tables(events: pa.Table, plan: RoutingPlan) -> Iterator[tuple[int, pa.Table]]:
    """(slot, its events in batch order as `ROUTED_SCHEMA`) for each slot `events` feed."""
    position = positions_of(events, plan.offsets)
    txn = plan.txn_of[position]
    runs = txn >= 0
    position, txn = position[runs], txn[runs]
    slot = plan.slot[txn]
    order = np.lexsort((position, slot))
    position, txn, slot = position[order], txn[order], slot[order]
    blobs = events.column("event").take(pa.array(np.flatnonzero(runs)[order]))
    starts = plan.access_start[txn]
    lengths = plan.access_start[txn + 1] - starts
    # The carry entries of each event, gathered: for every event its run of access indexes.
    within = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    carry = plan.carry[np.repeat(starts, lengths) + within]
    carry_offsets = np.zeros(len(txn) + 1, dtype=np.int32)
    np.cumsum(lengths, out=carry_offsets[1:])
    bounds = np.flatnonzero(np.diff(slot)) + 1
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(slot)], strict=True):
        if lo == hi:
            continue
        offsets = carry_offsets[lo : hi + 1] - carry_offsets[lo]
        yield (
            int(slot[lo]),
            pa.table(
                {
                    "position": pa.array(position[lo:hi], pa.int64()),
                    "event": blobs.slice(lo, hi - lo),
                    "deferred": pa.array(plan.deferred[txn[lo:hi]], pa.int64()),
                    "carry": pa.ListArray.from_arrays(
                        pa.array(offsets, pa.int32()),
                        pa.array(carry[carry_offsets[lo] : carry_offsets[hi]], pa.int32()),
                    ),
                },
                schema=ROUTED_SCHEMA,
            ),
        )
