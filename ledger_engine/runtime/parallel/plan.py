"""Scheduling a batch for serial-equivalent parallel execution.

The input is what every runnable transaction of a batch touches, known before anything runs:
for transaction `t` (its index in batch order) a list of (row id, access flags), where a row id
is a 64-bit hash of (table, key) (`row_ids`). The output says, for each transaction, in which
*round* and which *bin* it runs, and which rows are *deferred*.

Rows are classified over the whole batch:

- `READ_ONLY`: read and never written or added to. Its value is the same for every reader, so
  it ties no transactions together; each bin gets a copy.
- `DEFERRED`: only ever added to (`AccessType.ADD`), by at least two transactions. Adds commute:
  each transaction records its delta without reading the row, and the row's before and after
  values are settled after the batch, in batch order (`ledger_engine.runtime.parallel.settle`). A
  hot fee account credited by every transfer is such a row; it ties nothing together.
- `ORDERED`: everything else. Transactions touching the same ordered row must run in batch order
  on one worker.

Rounds run one after another; round `r` holds a contiguous slice of the batch. Within a round,
the transactions connected through ordered rows form a *conflict component*; a component runs
in one bin, in batch order, and the components are spread over the bins so that the largest
bin is as small as possible (longest-first for the large components, then filling up). Every
pair of transactions that share an ordered row therefore runs in batch order: in one bin if
they are in one round, in round order otherwise. That is all serial equivalence needs.

Why rounds: a uniform workload whose batch has more transactions than half its rows forms one
giant component (a random graph past its threshold), which no bin assignment can split. Cut
into rounds of fewer transactions, each round's components are small again. A round costs a
fixed amount (a Spark job), so `plan` picks the number of rounds that minimises the estimated
time: `rounds * round_cost + sum of each round's largest bin`, in units of one transaction's
execution. A workload that cannot be split (every transaction reads and writes one hot row)
gets one round whose one component runs in one bin: serial execution, plus the fixed cost;
such a plan defers no row (in one bin, adds in batch order tie nothing apart), so it needs no
settling after it.

Cost on the driver: the input is 17 bytes per access; `plan` factorises the row ids (hashing,
O(A)), then finds components with `scipy.sparse.csgraph.connected_components` over the
transaction/row graph (O(T + A)) once per candidate number of rounds (a handful: candidates
double, and the search stops at the first that does not improve on the one before, or once a
candidate's lower bound `rounds * round_cost + T / bins` cannot beat the best so far). Hash
collisions only ever merge rows, which makes the schedule more conservative, never wrong.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from ledger_engine.core.declarations import AccessType

T = TypeVar("T")

# Access flags of one binding (an access may carry several, e.g. READ | WRITE).
READ, WRITE, ADD = 1, 2, 4

_FLAGS = {
    AccessType.READ: READ,
    AccessType.WRITE: WRITE,
    AccessType.READ_WRITE: READ | WRITE,
    AccessType.ADD: ADD,
}


def access_flags(access: AccessType) -> int:
    """The flags of an access type."""
    return _FLAGS[access]


def row_ids(tables: Sequence[int], keys: Sequence[str | int]) -> np.ndarray:
    """Signed 64-bit ids of rows: row `i` is `keys[i]` of the `tables[i]`-th declared table.

    The keys are hashed with a keyed SipHash (pandas' `hash_array`, with its fixed key, which
    hashes an int key as its digits: a table's keys are all of one type) and mixed with the
    table's number by SplitMix64's finaliser, so every process of a run computes the same ids
    and two tables' keys of the same text differ; ids never leave a run.
    """
    if len(keys) == 0:
        return np.zeros(0, dtype=np.int64)
    objects = np.empty(len(keys), dtype=object)
    objects[:] = keys
    hashed = pd.util.hash_array(objects, categorize=False)
    mixed = hashed ^ (np.asarray(tables, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    mixed ^= mixed >> np.uint64(30)
    mixed *= np.uint64(0xBF58476D1CE4E5B9)
    mixed ^= mixed >> np.uint64(27)
    mixed *= np.uint64(0x94D049BB133111EB)
    mixed ^= mixed >> np.uint64(31)
    return mixed.view(np.int64)


def row_id(table_index: int, key: str | int) -> int:
    """The id of one row (see `row_ids`)."""
    return int(row_ids([table_index], [key])[0])


class RowClass(IntEnum):
    READ_ONLY = 0
    DEFERRED = 1
    ORDERED = 2


@dataclass(frozen=True)
class Accesses:
    """The accesses of a batch's runnable transactions, one entry per binding.

    `txn` holds transaction indexes (0 .. count-1, in batch order), `row` row ids (`row_id`),
    `flags` access flags. A transaction with no bindings has no entry but still counts.
    """

    count: int
    txn: np.ndarray
    row: np.ndarray
    flags: np.ndarray

    def __post_init__(self) -> None:
        assert len(self.txn) == len(self.row) == len(self.flags)
        assert len(self.txn) == 0 or (self.txn.min() >= 0 and self.txn.max() < self.count)
        assert np.all(np.diff(self.txn) >= 0), "accesses come in transaction order"

    @classmethod
    def from_lists(cls, count: int, txn: Any, row: Any, flags: Any) -> Accesses:
        return cls(
            count,
            np.asarray(txn, dtype=np.int64),
            np.asarray(row, dtype=np.int64),
            np.asarray(flags, dtype=np.uint8),
        )


@dataclass(frozen=True)
class Schedule:
    """Where each transaction runs: `round[t]` and `bin[t]`; `deferred` row ids, and for each
    transaction the bitmask of its bindings whose rows are deferred (`deferred_bindings[t]`,
    bit `i` for binding `i`).

    `by_row` orders the accesses by row, then by transaction (a stable sort of `Accesses.row`),
    and `ordered_by_row[i]` says whether the row of access `by_row[i]` is ordered, and
    `row_starts` where each row's run begins in that order: what a runner needs to hand rows
    from round to round (`ledger_engine.runtime.columnar.carry`).
    """

    rounds: int
    bins: int
    round: np.ndarray
    bin: np.ndarray
    deferred: frozenset[int]
    deferred_bindings: np.ndarray
    largest_bin: tuple[int, ...]  # per round, the most transactions any bin runs
    by_row: np.ndarray | None = None
    row_starts: np.ndarray | None = None
    ordered_by_row: np.ndarray | None = None

    @property
    def estimated_cost(self) -> int:
        """The time the plan expects, in transactions (without the rounds' fixed cost)."""
        return int(sum(self.largest_bin))


@dataclass(frozen=True)
class _Rows:
    """The accesses sorted by row (stable, so each row's accesses stay in transaction order)
    and what each distinct row is."""

    by_row: np.ndarray  # access indexes, sorted by row then transaction
    starts: np.ndarray  # where each distinct row's run starts in `by_row`
    ids: np.ndarray  # each distinct row's id
    classes: np.ndarray  # each distinct row's `RowClass`


def stable_row_order(row: np.ndarray, index_bits: int | None = None) -> np.ndarray:
    """`np.argsort(row, kind="stable")`, about four times faster on millions of row ids.

    NumPy sorts int64 values with SIMD but argsorts them, stably, by merging (0.45 s for
    4x10^6 ids here). So each id's low bits are replaced by its index (`index_bits` of them,
    enough for every index) and the values sorted: that orders by (high bits, index). Two
    distinct ids with the same high bits (rare for random ids: about one pair per two batches
    of 10^6 transfers, 2x10^6 rows in 2^42 values) leave their high-bits group out of order;
    such groups are sorted again, stably, by the whole id.
    """
    count = len(row)
    bits = max(count - 1, 1).bit_length() if index_bits is None else index_bits
    assert (count - 1).bit_length() <= bits < 48, "the index fits and some high bits remain"
    if count < 2:
        return np.arange(count, dtype=np.int64)
    low = np.int64((1 << bits) - 1)
    keys = (row & ~low) | np.arange(count, dtype=np.int64)
    keys.sort()
    order = keys & low
    high = keys & ~low
    ordered = row[order]
    mixed = np.flatnonzero((high[1:] == high[:-1]) & (ordered[1:] != ordered[:-1]))
    for at in np.unique(high[mixed]):
        lo, hi = np.searchsorted(high, at, "left"), np.searchsorted(high, at, "right")
        order[lo:hi] = order[lo:hi][np.argsort(ordered[lo:hi], kind="stable")]
    return order


def sorted_rows(accesses: Accesses, forced: frozenset[int]) -> _Rows:
    """One sort of the accesses by row gives each row's accesses, flags and class.

    Rows are classified over the whole batch; `forced` rows are always ordered. Adds per
    row: deferring pays only where two transactions would otherwise be tied (a transaction
    adding through two bindings counts twice; deferring it is merely useless).
    """
    by_row = stable_row_order(accesses.row)
    rows = accesses.row[by_row]
    starts = (
        np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]]) if len(rows) else np.zeros(0, np.int64)
    )
    ids = rows[starts]
    flags = accesses.flags[by_row]
    if len(starts):
        seen = np.bitwise_or.reduceat(flags, starts)
        adds = np.add.reduceat((flags == ADD).astype(np.int64), starts)
    else:
        seen = adds = np.zeros(0, dtype=np.int64)
    classes = np.full(len(starts), RowClass.ORDERED, dtype=np.uint8)
    classes[seen == READ] = RowClass.READ_ONLY
    classes[(seen == ADD) & (adds >= 2)] = RowClass.DEFERRED
    if forced:
        classes[np.isin(ids, np.fromiter(forced, np.int64, len(forced)))] = RowClass.ORDERED
    return _Rows(by_row, starts, ids, classes)


def _undeferred(rows: _Rows) -> _Rows:
    """`rows` with every deferred row ordered: for a batch that runs in one bin of one round,
    where deferring adds ties nothing apart and would only cost a settling step after it."""
    classes = rows.classes.copy()
    classes[classes == RowClass.DEFERRED] = RowClass.ORDERED
    return _Rows(rows.by_row, rows.starts, rows.ids, classes)


def conflict_edges(accesses: Accesses, rows: _Rows) -> tuple[np.ndarray, np.ndarray]:
    """The pairs of transactions that follow each other on an ordered row (the later one
    must see the earlier one's write): a chain per row, which connects exactly the
    transactions that share it."""
    lengths = np.diff(np.r_[rows.starts, len(rows.by_row)])
    ordered = np.repeat(rows.classes == RowClass.ORDERED, lengths)
    txn = accesses.txn[rows.by_row]
    same_row = np.ones(len(txn), dtype=bool)
    same_row[rows.starts] = False  # an access that starts a row's run follows no access of it
    follows = same_row[1:] & ordered[1:]
    return txn[:-1][follows], txn[1:][follows]


def conflict_components(count: int, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """The component of each of `count` transactions in the graph of edges `first[i]` -
    `second[i]`."""
    # Imported here: planning runs on the driver, and Spark workers that import this module
    # for row ids would otherwise pay scipy's import on start-up.
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    graph = coo_matrix(
        (np.ones(len(first), dtype=np.int8), (first, second)), shape=(count, count)
    ).tocsr()
    _, labels = connected_components(graph, directed=True, connection="weak")
    return labels


def assign_bins(component: np.ndarray, bins: int) -> tuple[np.ndarray, int]:
    """A bin for each transaction such that a component stays in one bin and the largest bin
    is small; returns the bins and the size of the largest. `component` holds non-negative
    component labels.

    Longest-processing-time first for the components larger than an eighth of a bin's share,
    then the rest, in label order, fill the bins up to the common level.
    """
    count = len(component)
    if count == 0:
        return np.zeros(0, dtype=np.int32), 0
    sizes = np.bincount(component)
    present = np.flatnonzero(sizes)
    share = count / bins
    big = present[sizes[present] > share / 8]
    big = big[np.argsort(-sizes[big], kind="stable")]
    loads = [(0, b) for b in range(bins)]
    target = np.zeros(len(sizes), dtype=np.int32)
    for comp in big:
        load, b = heapq.heappop(loads)
        target[comp] = b
        heapq.heappush(loads, (load + int(sizes[comp]), b))
    load_of = np.zeros(bins, dtype=np.int64)
    for load, b in loads:
        load_of[b] = load
    small = present[sizes[present] <= share / 8]
    if len(small):
        level = max(int(load_of.max()), -(-count // bins))
        edges = np.cumsum(np.maximum(level - load_of, 0))
        middle = np.cumsum(sizes[small]) - sizes[small] / 2
        target[small] = np.minimum(np.searchsorted(edges, middle, side="right"), bins - 1)
        np.add.at(load_of, target[small], sizes[small])
    return target[component], int(load_of.max())


def _doubling(limit: int) -> list[int]:
    candidates = [1]
    while candidates[-1] * 2 <= limit:
        candidates.append(candidates[-1] * 2)
    return candidates


def _round_of(count: int, rounds: int) -> np.ndarray:
    return (np.arange(count, dtype=np.int64) * rounds // max(count, 1)).astype(np.int32)


def plan(
    accesses: Accesses,
    bins: int,
    round_cost: int,
    forced: frozenset[int] = frozenset(),
    rounds: int | None = None,
) -> Schedule:
    """The schedule of a batch on `bins` bins; a round costs as much as `round_cost`
    transactions. `forced` row ids are treated as ordered (see
    `ledger_engine.runtime.parallel.settle`). `rounds`, when given, fixes the number of rounds
    instead of estimating the best."""
    assert bins >= 1 and round_cost >= 0
    count = accesses.count
    rows = sorted_rows(accesses, forced)
    first, second = conflict_edges(accesses, rows)

    best: tuple[int, int, np.ndarray] | None = None  # (estimate, rounds, components)
    candidates = [rounds] if rounds is not None else _doubling(max(count, 1))
    for rounds in candidates:
        if best is not None and rounds * round_cost + count / bins >= best[0]:
            break
        round_of = _round_of(count, rounds)
        # A row shared across rounds ties nothing within a round: only same-round links count.
        within = round_of[first] == round_of[second]
        components = conflict_components(count, first[within], second[within])
        estimate = rounds * round_cost + _estimated_makespan(components, round_of, rounds, bins)
        if best is not None and estimate >= best[0]:
            break  # splitting further no longer pays (a hot row, or rounds already small)
        best = (estimate, rounds, components)
        if bins == 1:
            break
    assert best is not None
    _, rounds, components = best
    round_of = _round_of(count, rounds)
    bin_of = np.zeros(count, dtype=np.int32)
    largest: list[int] = []
    for r in range(rounds):
        lo, hi = np.searchsorted(round_of, [r, r + 1])  # rounds are contiguous slices
        bin_of[lo:hi], biggest = assign_bins(components[lo:hi], bins)
        largest.append(biggest)
    if rounds == 1 and (count == 0 or bin_of.min() == bin_of.max()):
        rows = _undeferred(rows)
    lengths = np.diff(np.r_[rows.starts, len(rows.by_row)])
    by_class = np.repeat(rows.classes, lengths)
    deferred_access = np.empty(len(rows.by_row), dtype=bool)
    deferred_access[rows.by_row] = by_class == RowClass.DEFERRED
    return Schedule(
        rounds,
        bins,
        round_of,
        bin_of,
        frozenset(rows.ids[rows.classes == RowClass.DEFERRED].tolist()),
        deferred_masks(accesses, deferred_access),
        tuple(largest),
        rows.by_row,
        rows.starts,
        by_class == RowClass.ORDERED,
    )


def replanned(
    attempt: Callable[[frozenset[int]], tuple[T | None, frozenset[int]]],
) -> tuple[T, int]:
    """The result of `attempt(forced)` once no deferred row overflows, and how many times the
    batch was planned again to get there.

    A deferred row's adds are settled after the batch (`settle`); where their running sum
    leaves the 64-bit range, the order of the adds matters after all. `attempt(forced)` plans
    the batch with the rows `forced` ordered, runs it and returns its result, or None and the
    rows that overflowed; those are then forced too and the batch is planned again. A forced
    row is ordered (its adds run in batch order in one bin, each seeing the row), so it never
    overflows in settling again: each new plan forces at least one row more, and the loop
    ends. Both runners (`in_process`, `spark.engine`) plan through this one loop."""
    forced: frozenset[int] = frozenset()
    replans = 0
    while True:
        result, overflowed = attempt(forced)
        if not overflowed:
            assert result is not None, "an attempt without overflow has a result"
            return result, replans
        assert not overflowed <= forced, f"forced rows overflowed again: {overflowed & forced}"
        forced |= overflowed
        replans += 1


def deferred_masks(accesses: Accesses, deferred: np.ndarray) -> np.ndarray:
    """Per transaction, the bitmask of its bindings whose access is `deferred` (bit `i` for
    its `i`-th binding: accesses list every binding of a transaction, in binding order)."""
    masks = np.zeros(accesses.count, dtype=np.int64)
    if not deferred.any():
        return masks
    txn = accesses.txn
    starts = np.flatnonzero(np.r_[True, txn[1:] != txn[:-1]])
    # For each access, where its transaction's accesses start.
    first = np.repeat(starts, np.diff(np.r_[starts, len(txn)]))
    binding = np.arange(len(txn)) - first
    assert binding.max() < 63, "at most 63 bindings per stream"
    np.bitwise_or.at(masks, accesses.txn[deferred], np.left_shift(1, binding[deferred]))
    return masks


def _estimated_makespan(
    components: np.ndarray, round_of: np.ndarray, rounds: int, bins: int
) -> int:
    """Sum over rounds of max(largest component, round size / bins): a lower bound of the
    time each round's bins take, and close to it for longest-first assignment."""
    if len(components) == 0:
        return 0
    sizes = np.bincount(components)
    comp_round = np.zeros(len(sizes), dtype=np.int64)
    comp_round[components] = round_of  # a component lies within one round
    largest = np.zeros(rounds, dtype=np.int64)
    np.maximum.at(largest, comp_round, sizes)
    per_round = np.bincount(round_of, minlength=rounds)
    return int(np.maximum(largest, -(-per_round // bins)).sum())
