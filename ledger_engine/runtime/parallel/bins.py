"""Executing one bin of one round: the transactions one worker runs, in batch order.

A bin receives the rows its transactions need (every row they touch but the deferred ones,
absent rows as `None`) and the transactions themselves, sorted by position. It runs them one
at a time against its own copy of those rows. The schedule guarantees that no other bin of the
round writes or adds to a row this bin touches, so the copy is the truth for the round.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from ledger_engine.core.declarations import Stream, StreamingLedger
from ledger_engine.core.records import Change, Event, Rejection, record
from ledger_engine.core.transaction import Applied, PendingAdd, RowKey, execute


class Runnable(NamedTuple):
    """An admitted event with its stream and resolved keys, at `position` in the batch;
    `deferred` is the bitmask of its bindings whose rows are deferred. (A named tuple, built
    with `records.record` where one is made per event: a dataclass's `__init__` costs a
    tenth of a transaction.)"""

    position: int
    event: Event
    stream: Stream
    keys: tuple[Any, ...]
    deferred: int = 0


class Executed(NamedTuple):
    """What running one transaction gave: `Applied` or a `Rejection`; for a rejection, the
    probes of the deferred rows it had added to (`transaction.execute` says why)."""

    position: int
    outcome: Applied | Rejection
    probes: tuple[PendingAdd, ...] = ()


def table_indexes(ledger: StreamingLedger) -> dict[str, int]:
    """Each table's index in declaration order (the first component of its row ids)."""
    return {name: index for index, name in enumerate(ledger.tables)}


# The rows delivered to a bin: table name -> key -> value (`None` for an absent row).
BinRows = dict[str, dict[Any, Any]]


def execute_bin(rows: BinRows, runnables: Iterable[Runnable]) -> Iterator[Executed]:
    """Run `runnables` (sorted by position) against `rows`, which is updated in place.

    `rows` must hold every non-deferred row the transactions touch (`None` for an absent
    one); a transaction that touches another raises `transaction.MissingRow`.
    """
    last = -1
    for runnable in runnables:
        assert runnable.position > last, "a bin runs its transactions in batch order"
        last = runnable.position
        probes: list[PendingAdd] = []
        outcome = execute(
            runnable.stream,
            runnable.event,
            runnable.keys,
            rows,
            delivered=True,
            deferred=runnable.deferred,
            probes=probes,
        )
        if type(outcome) is Applied:
            for change in outcome.changes:
                if type(change) is Change:
                    rows[change.table][change.key] = change.after
        yield record(Executed, (runnable.position, outcome, tuple(probes) if probes else ()))


def empty_rows(ledger: StreamingLedger) -> BinRows:
    """A bin's rows before any is delivered: an empty mapping per table."""
    return {name: {} for name in ledger.tables}


@dataclass
class NetChange:
    """A row's value before a stretch of transactions and after it."""

    before: Any
    after: Any


def net_changes(executed: Iterable[Executed]) -> dict[RowKey, NetChange]:
    """The net change of every (non-deferred) row the applied transactions wrote."""
    net: dict[RowKey, NetChange] = {}
    for item in executed:
        if not isinstance(item.outcome, Applied):
            continue
        for change in item.outcome.changes:
            if isinstance(change, PendingAdd):
                continue
            row = (change.table, change.key)
            found = net.get(row)
            if found is None:
                net[row] = NetChange(change.before, change.after)
            else:
                assert found.after == change.before, f"row {row} changed between two writes"
                found.after = change.after
    return net


def rows_for(state: Mapping[str, Mapping[Any, Any]], runnables: Iterable[Runnable]) -> BinRows:
    """The rows a bin needs, read from an in-memory `state` (for in-process runs)."""
    rows: BinRows = {name: {} for name in state}
    for runnable in runnables:
        bindings = zip(runnable.stream.bindings, runnable.keys, strict=True)
        for i, (binding, key) in enumerate(bindings):
            if not runnable.deferred >> i & 1:
                name = binding.table.name
                rows[name][key] = state[name].get(key)
    return rows
