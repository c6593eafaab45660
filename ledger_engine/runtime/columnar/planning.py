"""Planning a batch from its admitted events' access columns: the plan as routing reads it.

The input is the admitted events that run (`admission.Admitted.runnable`: each one's batch
position and its rows as row ids and access flags); the output is the schedule's shape
(rounds and slots) and the `RoutingPlan` the route and execute tasks read. It is all array
operations over the batch (sorting accesses by row, conflict components, bins), about a
microsecond per event: the Spark engine runs it in one executor task (`tasks.plan_task`), so
that the driver handles no array of the batch's size beyond its admission.
"""

from __future__ import annotations

import pickle
import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ledger_engine.runtime.columnar.carry import carry_slots, slots
from ledger_engine.runtime.columnar.routing import RoutingPlan
from ledger_engine.runtime.parallel.plan import Accesses, plan

# What planning reads of the admitted events that run.
PLAN_INPUT_COLUMNS = ("position", "acc_row", "acc_flags")
# What a plan task gives the driver: the plan's shape, and its routing as `sealed_routing`
# made it (one row).
PLAN_SCHEMA = pa.schema(
    [
        ("rounds", pa.int32()),
        ("slots", pa.int32()),
        ("defers", pa.bool_()),
        ("routing", pa.binary()),
    ]
)


@dataclass(frozen=True)
class PlanRequest:
    """Everything a batch's plan is made from: the runnable events' `PLAN_INPUT_COLUMNS`, the
    units' `offsets`, and the plan's settings (see `ledger_engine.runtime.parallel.plan`)."""

    runnable: pa.Table
    offsets: np.ndarray
    bins: int
    round_cost: int
    forced: frozenset[int]
    rounds: int | None

    def __post_init__(self) -> None:
        assert tuple(self.runnable.column_names) == PLAN_INPUT_COLUMNS


@dataclass(frozen=True)
class PlannedBatch:
    """A batch's plan: how many rounds and slots it uses, whether it defers some row (then
    the rounds are followed by settling), and how its events are routed."""

    rounds: int
    slots: int
    defers: bool
    routing: RoutingPlan

    def shape(self) -> pa.Table:
        """The plan as a plan task gives it to the driver (`PLAN_SCHEMA`)."""
        return pa.table(
            {
                "rounds": [self.rounds],
                "slots": [self.slots],
                "defers": [self.defers],
                "routing": [sealed_routing(self.routing)],
            },
            schema=PLAN_SCHEMA,
        )


# A sealed routing plan: its pickle's length, then the pickle compressed (about a fifth of
# its size: a run's positions and slots are regular), so that the driver forwards a few
# megabytes as they are instead of unpacking and packing the plan's arrays again.
_LENGTH = struct.Struct("<q")
_CODEC = "zstd"


def sealed_routing(routing: RoutingPlan) -> bytes:
    """`routing` as bytes for `routing_of`."""
    blob = pickle.dumps(routing, pickle.HIGHEST_PROTOCOL)
    return _LENGTH.pack(len(blob)) + pa.compress(blob, codec=_CODEC, asbytes=True)


def routing_of(sealed: bytes) -> RoutingPlan:
    """The routing plan `sealed_routing` sealed."""
    (length,) = _LENGTH.unpack_from(sealed)
    blob = pa.decompress(memoryview(sealed)[_LENGTH.size :], length, codec=_CODEC, asbytes=True)
    routing = pickle.loads(blob)
    assert isinstance(routing, RoutingPlan)
    return routing


def accesses_of(runnable: pa.Table) -> tuple[Accesses, np.ndarray]:
    """The accesses of the runnable events, in their order (the plan's transaction indexes),
    and where each event's accesses start among them (their count at the end)."""
    rows = runnable.column("acc_row").combine_chunks()
    flags = runnable.column("acc_flags").combine_chunks().flatten()
    offsets = rows.offsets.to_numpy()
    starts = (offsets - offsets[0]).astype(np.int64)  # a slice's offsets start where it does
    count = len(runnable)
    # Views, not copies, where the columns already hold the plan's types (they do: row ids
    # are int64, flags int8 of values below 8).
    accesses = Accesses(
        count,
        np.repeat(np.arange(count, dtype=np.int64), np.diff(starts)),
        np.asarray(rows.flatten().to_numpy(zero_copy_only=False), dtype=np.int64),
        np.asarray(flags.to_numpy(zero_copy_only=False)).view(np.uint8),
    )
    return accesses, starts


def planned_batch(request: PlanRequest) -> PlannedBatch:
    """The plan of a batch and where its events and rows go."""
    accesses, access_start = accesses_of(request.runnable)
    schedule = plan(accesses, request.bins, request.round_cost, request.forced, request.rounds)
    position = request.runnable.column("position").to_numpy()
    txn_of = np.full(int(request.offsets[-1]), -1, dtype=np.int64)
    txn_of[position] = np.arange(len(position))
    slot = slots(schedule)
    routing = RoutingPlan(
        request.offsets,
        txn_of,
        slot,
        schedule.deferred_bindings,
        access_start,
        carry_slots(accesses, schedule),
    )
    defers = bool(schedule.deferred_bindings.any())
    return PlannedBatch(schedule.rounds, len(np.unique(slot)), defers, routing)
