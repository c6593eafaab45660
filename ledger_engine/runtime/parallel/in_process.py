"""The parallel algorithm, run in one process: admit, plan, execute bins round by round,
settle deferred adds.

`run_partitioned` executes a batch exactly as the Spark runner does (same admission, same
schedule, same bins, same settling), only with the bins of a round run one after another in
this process instead of as Spark tasks. It is how the algorithm is checked against the serial
runner on many generated workloads quickly, and it is a faithful trace of what each Spark task
receives and does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ledger_engine.core.admission import Screened, admit_batch
from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.core.records import Duplicate, Event, Rejection, RunResult
from ledger_engine.core.transaction import Applied, PendingAdd
from ledger_engine.runtime import Runner
from ledger_engine.runtime.gc_pause import gc_paused
from ledger_engine.runtime.parallel.assemble import assemble, pack
from ledger_engine.runtime.parallel.bins import (
    Executed,
    Runnable,
    execute_bin,
    net_changes,
    rows_for,
    table_indexes,
)
from ledger_engine.runtime.parallel.plan import (
    Accesses,
    Schedule,
    access_flags,
    plan,
    replanned,
    row_id,
    row_ids,
)
from ledger_engine.runtime.parallel.settle import PROBE, Overflow, Pending, settle
from ledger_engine.runtime.serial import State, initial_state


def batch_accesses(ledger: StreamingLedger, runnables: list[Runnable]) -> Accesses:
    """Every binding's row id and access flags, by transaction index."""
    index = table_indexes(ledger)
    txn: list[int] = []
    tables: list[int] = []
    keys: list[Any] = []
    flags: list[int] = []
    for i, runnable in enumerate(runnables):
        for binding, key in zip(runnable.stream.bindings, runnable.keys, strict=True):
            txn.append(i)
            tables.append(index[binding.table.name])
            keys.append(key)
            flags.append(access_flags(binding.access))
    return Accesses.from_lists(len(runnables), txn, row_ids(tables, keys), flags)


def runnable_events(
    batch: Sequence[Event], verdicts: Sequence[Screened | Rejection | Duplicate]
) -> list[Runnable]:
    """The events admission let run, with their streams and keys, in batch order."""
    return [
        Runnable(position, batch[position], v.stream, v.keys)
        for position, v in enumerate(verdicts)
        if isinstance(v, Screened) and v.stream is not None and v.keys is not None
    ]


def pending_adds(executed: Iterable[Executed]) -> list[Pending]:
    """The pending adds of the applied transactions, with their place in the batch, and the
    probes of the rejected ones (at seq `PROBE`)."""
    pending = []
    for item in executed:
        if isinstance(item.outcome, Applied):
            for seq, change in enumerate(item.outcome.changes):
                if isinstance(change, PendingAdd):
                    pending.append(Pending(item.position, seq, change))
        pending.extend(Pending(item.position, PROBE, probe) for probe in item.probes)
    return pending


def run_partitioned(
    ledger: StreamingLedger,
    events: Iterable[Event],
    state: Mapping[str, Mapping[Any, Any]] | None = None,
    known_requests: Mapping[str, str] | None = None,
    *,
    bins: int = 2,
    round_cost: int = 0,
    rounds: int | None = None,
) -> RunResult:
    """Run `events` with the parallel algorithm in this process; equals `run_serial`."""
    ledger.check()
    batch = list(events)
    with gc_paused():
        start = initial_state(ledger, state)
        verdicts = admit_batch(ledger.streams, batch, known_requests or {})
        runnables = runnable_events(batch, verdicts)
        index = table_indexes(ledger)
        accesses = batch_accesses(ledger, runnables)

        def attempt(forced: frozenset[int]) -> tuple[Any, frozenset[int]]:
            schedule = plan(accesses, bins, round_cost, forced, rounds)
            executed = execute_schedule(start, runnables, schedule)
            pending = pending_adds(executed.values())
            base = {p.row: start[p.add.table].get(p.add.key) for p in pending}
            try:
                settled, _ = settle(pending, base)
            except Overflow as overflow:
                return None, frozenset(row_id(index[table], key) for table, key in overflow.rows)
            return (executed, settled), frozenset()

        (executed, settled), _ = replanned(attempt)
        return assemble(
            batch,
            start,
            [None if isinstance(v, Screened) else v for v in verdicts],
            {position: pack(item) for position, item in executed.items()},
            {(s.position, s.seq): s.change for s in settled},
        )


def execute_schedule(
    start: State, runnables: list[Runnable], schedule: Schedule
) -> dict[int, Executed]:
    """Run every bin of every round; each round's bins start from the same state."""
    state = {name: dict(rows) for name, rows in start.items()}
    executed: dict[int, Executed] = {}
    for r in range(schedule.rounds):
        in_round = schedule.round == r
        bins = [
            [
                runnables[i]._replace(deferred=int(schedule.deferred_bindings[i]))
                for i in np.flatnonzero(in_round & (schedule.bin == b))
            ]
            for b in range(schedule.bins)
        ]
        deliveries = [rows_for(state, members) for members in bins]
        written: set[tuple[str, Any]] = set()
        for members, rows in zip(bins, deliveries, strict=True):
            results = list(execute_bin(rows, members))
            net = net_changes(results)
            assert written.isdisjoint(net), "two bins of a round wrote the same row"
            written |= net.keys()
            for (table, key), change in net.items():
                if change.after is None:
                    state[table].pop(key, None)
                else:
                    state[table][key] = change.after
            executed.update((item.position, item) for item in results)
    return executed


def partitioned_runner(bins: int = 2, round_cost: int = 0, rounds: int | None = None) -> Runner:
    """`run_partitioned` with these options, as a `Runner`."""
    assert bins >= 1 and round_cost >= 0

    def run(
        ledger: StreamingLedger,
        events: Iterable[Event],
        state: Mapping[str, Mapping[Any, Any]] | None = None,
        known_requests: Mapping[str, str] | None = None,
    ) -> RunResult:
        return run_partitioned(
            ledger, events, state, known_requests, bins=bins, round_cost=round_cost, rounds=rounds
        )

    return run
