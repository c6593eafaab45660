"""Planning a batch from its runnable events' access columns, as the plan task does it: the
routing it gives is the scheduler's plan, and it survives being sealed for the driver."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger_engine.runtime.columnar.carry import carry_slots, slots
from ledger_engine.runtime.columnar.planning import (
    PLAN_SCHEMA,
    PlanRequest,
    accesses_of,
    planned_batch,
    routing_of,
    sealed_routing,
)
from ledger_engine.runtime.parallel.plan import ADD, READ, WRITE, plan

FLAGS = st.sampled_from([READ, WRITE, READ | WRITE, ADD])
# A runnable event: its rows (row id, access flags), at most a few of a few rows, so that
# conflicts, deferred rows and rows handed between rounds all occur.
EVENT = st.lists(st.tuples(st.integers(0, 12), FLAGS), min_size=0, max_size=4)


@st.composite
def requests(draw: st.DrawFn) -> PlanRequest:
    """A batch of positions, some of which do not run, and its runnable events' accesses."""
    events = draw(st.lists(EVENT, min_size=0, max_size=40))
    skipped = draw(st.lists(st.booleans(), min_size=len(events), max_size=len(events)))
    position, at = [], 0
    for skip in skipped:
        at += 1 + int(skip)  # a skipped position is an event that does not run
        position.append(at - 1)
    runnable = pa.table(
        {
            "position": pa.array(position, pa.int64()),
            "acc_row": pa.array([[row for row, _ in e] for e in events], pa.list_(pa.int64())),
            "acc_flags": pa.array([[f for _, f in e] for e in events], pa.list_(pa.int8())),
        }
    )
    # In chunks, as a batch's admission joins its units' columns (each chunk a slice).
    cut = draw(st.integers(0, len(events)))
    runnable = pa.concat_tables([runnable.slice(0, cut), runnable.slice(cut)])
    return PlanRequest(
        runnable,
        np.array([0, at + draw(st.integers(0, 2))], dtype=np.int64),
        bins=draw(st.integers(1, 4)),
        round_cost=draw(st.sampled_from([0, 1, 5])),
        forced=frozenset(draw(st.sets(st.integers(0, 12), max_size=2))),
        rounds=draw(st.sampled_from([None, 1, 2, 3])),
    )


@settings(max_examples=200, deadline=None)
@given(requests())
def test_the_routing_is_the_schedulers_plan_of_the_runnable_events(request: PlanRequest):
    planned = planned_batch(request)
    accesses, _ = accesses_of(request.runnable)
    schedule = plan(accesses, request.bins, request.round_cost, request.forced, request.rounds)
    routing = planned.routing
    count = len(request.runnable)

    assert planned.rounds == schedule.rounds
    assert np.array_equal(routing.slot, slots(schedule))
    assert planned.slots == len(np.unique(routing.slot))
    assert np.array_equal(routing.deferred, schedule.deferred_bindings)
    assert planned.defers == bool(schedule.deferred_bindings.any())
    assert np.array_equal(routing.carry, carry_slots(accesses, schedule))
    # Every position of the batch maps to its runnable index, or -1 where nothing runs.
    position = request.runnable.column("position").to_numpy()
    assert len(routing.txn_of) == request.offsets[-1]
    assert np.array_equal(routing.txn_of[position], np.arange(count))
    assert np.count_nonzero(routing.txn_of >= 0) == count
    # Each event's accesses start where its list of rows does.
    lengths = [len(rows) for rows in request.runnable.column("acc_row").to_pylist()]
    assert np.array_equal(np.diff(routing.access_start), lengths)


@settings(max_examples=50, deadline=None)
@given(requests())
def test_a_sealed_routing_opens_as_the_same_arrays(request: PlanRequest):
    routing = planned_batch(request).routing
    opened = routing_of(sealed_routing(routing))
    for name in ("offsets", "txn_of", "slot", "deferred", "access_start", "carry"):
        assert np.array_equal(getattr(opened, name), getattr(routing, name)), name
        assert getattr(opened, name).dtype == getattr(routing, name).dtype, name


def test_the_plans_shape_names_its_rounds_slots_and_whether_it_settles():
    # Two events add to row 9 and write rows of their own: row 9 is deferred.
    runnable = pa.table(
        {
            "position": pa.array([0, 1], pa.int64()),
            "acc_row": pa.array([[9, 1], [9, 2]], pa.list_(pa.int64())),
            "acc_flags": pa.array([[ADD, READ | WRITE], [ADD, READ | WRITE]], pa.list_(pa.int8())),
        }
    )
    request = PlanRequest(runnable, np.array([0, 2]), 2, 0, frozenset(), 1)
    shape = planned_batch(request).shape()
    assert shape.schema == PLAN_SCHEMA
    assert shape.select(["rounds", "slots", "defers"]).to_pylist() == [
        {"rounds": 1, "slots": 2, "defers": True}
    ]
    routing = routing_of(shape.column("routing")[0].as_py())
    assert routing.slot.tolist() == [0, 1]
