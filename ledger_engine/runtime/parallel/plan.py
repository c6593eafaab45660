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
gets one round whose one component runs in one bin: serial execution, plus the fixed cost.

Cost on the driver: the input is 17 bytes per access; `plan` factorises the row ids (hashing,
O(A)), then finds components with `scipy.sparse.csgraph.connected_components` over the
transaction/row graph (O(T + A)) once per candidate number of rounds (a handful: candidates
double, and the search stops at the first that does not improve on the one before, or once a
candidate's lower bound `rounds * round_cost + T / bins` cannot beat the best so far). Hash
collisions only ever merge rows, which makes the schedule more conservative, never wrong.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import numpy as np
import pandas as pd

from ledger_engine.core.declarations import AccessType

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

    A keyed SipHash (pandas' `hash_array`, with its fixed key), so every process of a run
    computes the same ids; ids never leave a run.
    """
    texts = np.array(
        [f"{t}:{'s' if isinstance(k, str) else 'i'}{k}" for t, k in zip(tables, keys, strict=True)],
        dtype=object,
    )
    if len(texts) == 0:
        return np.zeros(0, dtype=np.int64)
    return pd.util.hash_array(texts, categorize=False).view(np.int64)


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
    bit `i` for binding `i`)."""

    rounds: int
    bins: int
    round: np.ndarray
    bin: np.ndarray
    deferred: frozenset[int]
    deferred_bindings: np.ndarray
    largest_bin: tuple[int, ...]  # per round, the most transactions any bin runs
    # Per access (in `Accesses` order): its row as a dense code, and whether the row is ordered.
    access_row: np.ndarray | None = None
    access_ordered: np.ndarray | None = None

    @property
    def estimated_cost(self) -> int:
        """The time the plan expects, in transactions (without the rounds' fixed cost)."""
        return int(sum(self.largest_bin))


def classify_rows(
    row_index: np.ndarray, flags: np.ndarray, rows: int, forced: np.ndarray
) -> np.ndarray:
    """The `RowClass` of each of `rows` distinct rows; `forced` rows are always ordered."""
    seen = np.zeros(rows, dtype=np.uint8)
    np.bitwise_or.at(seen, row_index, flags)
    # Adds per row: deferring pays only where two transactions would otherwise be tied. (A
    # transaction adding through two bindings counts twice; deferring it is merely useless.)
    adds = np.bincount(row_index[flags == ADD], minlength=rows)
    classes = np.full(rows, RowClass.ORDERED, dtype=np.uint8)
    classes[seen == READ] = RowClass.READ_ONLY
    classes[(seen == ADD) & (adds >= 2)] = RowClass.DEFERRED
    classes[forced] = RowClass.ORDERED
    return classes


def conflict_components(
    count: int, txn: np.ndarray, row_node: np.ndarray, row_nodes: int
) -> np.ndarray:
    """The component of each of `count` transactions in the graph whose edges join
    transaction `txn[i]` to row node `row_node[i]`; transactions of one component share rows
    through a chain of transactions."""
    nodes = count + row_nodes
    # Imported here: planning runs on the driver, and Spark workers that import this module
    # for row ids would otherwise pay scipy's import on start-up.
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    graph = csr_matrix(
        (np.ones(len(txn), dtype=np.int8), (txn, count + row_node)), shape=(nodes, nodes)
    )
    _, labels = connected_components(graph, directed=False)
    return labels[:count]


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
    codes, uniques = pd.factorize(accesses.row)
    codes = codes.astype(np.int64)
    forced_rows = np.flatnonzero(np.isin(uniques, np.fromiter(forced, np.int64, len(forced))))
    classes = classify_rows(codes, accesses.flags, len(uniques), forced_rows)
    deferred = frozenset(int(r) for r in uniques[classes == RowClass.DEFERRED])
    ordered = classes[codes] == RowClass.ORDERED
    txn, row_node = accesses.txn[ordered], codes[ordered]

    best: tuple[int, int, np.ndarray] | None = None  # (estimate, rounds, components)
    candidates = [rounds] if rounds is not None else _doubling(max(count, 1))
    for rounds in candidates:
        if best is not None and rounds * round_cost + count / bins >= best[0]:
            break
        round_of = _round_of(count, rounds)
        # Row nodes are per round: rows shared across rounds tie nothing within a round.
        components = conflict_components(
            count, txn, round_of[txn] * len(uniques) + row_node, rounds * len(uniques)
        )
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
        members = np.flatnonzero(round_of == r)
        bin_of[members], biggest = assign_bins(components[members], bins)
        largest.append(biggest)
    masks = deferred_masks(accesses, classes[codes] == RowClass.DEFERRED)
    return Schedule(
        rounds, bins, round_of, bin_of, deferred, masks, tuple(largest), codes, ordered
    )


def deferred_masks(accesses: Accesses, deferred: np.ndarray) -> np.ndarray:
    """Per transaction, the bitmask of its bindings whose access is `deferred` (bit `i` for
    its `i`-th binding: accesses list every binding of a transaction, in binding order)."""
    masks = np.zeros(accesses.count, dtype=np.int64)
    if not deferred.any():
        return masks
    first = np.searchsorted(accesses.txn, accesses.txn)
    binding = np.arange(len(accesses.txn)) - first
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
