"""The scheduler (`runtime.parallel.plan`): row classes, conflict components, rounds and bins,
and planning again until no deferred row overflows."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger_engine.runtime.parallel.plan import (
    ADD,
    READ,
    WRITE,
    Accesses,
    assign_bins,
    deferred_masks,
    plan,
    replanned,
    stable_row_order,
)

RW = READ | WRITE


def accesses(*transactions: list[tuple[int, int]]) -> Accesses:
    """One list of (row, flags) per transaction, in batch order."""
    txn, rows, flags = [], [], []
    for t, touched in enumerate(transactions):
        for row, flag in touched:
            txn.append(t)
            rows.append(row)
            flags.append(flag)
    return Accesses.from_lists(len(transactions), txn, rows, flags)


def same_bin(schedule, *txns: int) -> bool:
    return len({(int(schedule.round[t]), int(schedule.bin[t])) for t in txns}) == 1


def test_transactions_sharing_a_written_row_run_in_one_bin_in_batch_order():
    schedule = plan(accesses([(1, RW)], [(2, RW)], [(1, RW), (3, RW)], [(3, READ)]), 4, 0)
    assert same_bin(schedule, 0, 2, 3)


def test_a_row_that_is_only_read_ties_nothing():
    schedule = plan(accesses([(1, READ), (2, RW)], [(1, READ), (3, RW)]), 2, 0, rounds=1)
    assert not same_bin(schedule, 0, 1)
    assert schedule.deferred == frozenset()


def test_a_row_only_added_to_is_deferred_and_ties_nothing():
    schedule = plan(accesses([(9, ADD), (1, RW)], [(9, ADD), (2, RW)], [(9, ADD)]), 3, 0, rounds=1)
    assert schedule.deferred == frozenset({9})
    assert len({int(b) for b in schedule.bin}) == 3


def test_a_batch_that_runs_in_one_bin_defers_nothing():
    """Deferring adds pays only where it lets transactions run apart; in one bin of one round
    it would only add a settling step."""
    added_and_tied = accesses([(9, ADD), (1, RW)], [(9, ADD), (1, RW)], [(9, ADD), (1, READ)])
    for schedule in (
        plan(added_and_tied, 3, 0, rounds=1),
        plan(accesses([(9, ADD)], [(9, ADD)]), 1, 0),
    ):
        assert (
            len({(int(r), int(b)) for r, b in zip(schedule.round, schedule.bin, strict=True)}) == 1
        )
        assert schedule.deferred == frozenset()
        assert not schedule.deferred_bindings.any()


def test_a_row_added_to_and_read_is_ordered():
    schedule = plan(accesses([(9, ADD)], [(9, READ)], [(9, ADD)]), 3, 0, rounds=1)
    assert schedule.deferred == frozenset()
    assert same_bin(schedule, 0, 1, 2)


def test_a_forced_row_is_ordered_even_if_only_added_to():
    schedule = plan(accesses([(9, ADD)], [(9, ADD)]), 2, 0, forced=frozenset({9}), rounds=1)
    assert schedule.deferred == frozenset()
    assert same_bin(schedule, 0, 1)


def test_a_blind_write_orders_the_row():
    schedule = plan(accesses([(9, WRITE)], [(9, WRITE)]), 2, 0, rounds=1)
    assert same_bin(schedule, 0, 1)


def test_one_hot_row_read_and_written_by_every_transaction_gives_one_round_in_one_bin():
    schedule = plan(accesses(*[[(0, RW), (t + 1, RW)] for t in range(1_000)]), 4, 100)
    assert schedule.rounds == 1
    assert len({int(b) for b in schedule.bin}) == 1


def test_a_uniform_batch_past_the_giant_component_threshold_is_cut_into_rounds():
    rng = np.random.default_rng(3)
    rows = 20_000
    count = 20_000  # transactions; each ties two random rows: one giant component
    pairs = rng.integers(0, rows, size=(count, 2))
    one_round = plan(accesses(*[[(a, RW), (b, RW)] for a, b in pairs]), 2, 500, rounds=1)
    assert max(one_round.largest_bin) > 0.7 * count
    best = plan(accesses(*[[(a, RW), (b, RW)] for a, b in pairs]), 2, 500)
    assert best.rounds > 1
    assert sum(best.largest_bin) < 0.6 * count


def test_rounds_are_contiguous_slices_of_the_batch():
    schedule = plan(accesses(*[[(t % 5, RW)] for t in range(100)]), 2, 0, rounds=7)
    assert list(schedule.round) == sorted(schedule.round)
    assert set(schedule.round.tolist()) == set(range(7))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(st.integers(0, 12), st.sampled_from([READ, WRITE, RW, ADD])), max_size=4
        ),
        max_size=60,
    ),
    st.integers(1, 5),
    st.sampled_from([None, 1, 2, 5]),
)
def test_every_pair_sharing_an_ordered_row_keeps_batch_order(transactions, bins, rounds):
    """The serial-equivalence condition: two transactions that touch a row which is neither
    read-only nor deferred run in the same bin of a round, or in rounds in batch order."""
    schedule = plan(accesses(*transactions), bins, 0, rounds=rounds)
    touched: dict[int, list[tuple[int, int]]] = {}
    for t, items in enumerate(transactions):
        for row, flags in items:
            touched.setdefault(row, []).append((t, flags))
    for row, users in touched.items():
        kinds = {flags for _, flags in users}
        read_only = kinds == {READ}
        deferred = row in schedule.deferred
        if deferred:
            assert kinds == {ADD}
        if read_only or deferred:
            continue
        for (a, _), (b, _) in itertools.pairwise(users):
            assert a == b or schedule.round[a] < schedule.round[b] or same_bin(schedule, a, b)


def test_bins_keep_components_whole_and_balance_them():
    components = np.array([0] * 50 + [1] * 30 + [2] * 20 + list(range(3, 103)))
    bins, largest = assign_bins(components, 2)
    for label in (0, 1, 2):
        assert len(set(bins[components == label].tolist())) == 1
    loads = np.bincount(bins, minlength=2)
    assert loads.sum() == len(components)
    assert largest == loads.max() <= 101


INT64 = st.integers(-(2**63), 2**63 - 1)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(INT64, min_size=1, max_size=6).flatmap(
        lambda pool: st.lists(st.sampled_from(pool), max_size=200)
    ),
    st.integers(0, 40),
)
def test_the_fast_row_order_is_the_stable_sort_by_row(rows: list[int], spare_bits: int) -> None:
    """Rows sharing their high bits (forced here by a wide index part) are put in order too."""
    row = np.array(rows, dtype=np.int64)
    bits = min(max(len(row) - 1, 1).bit_length() + spare_bits, 47)
    assert np.array_equal(stable_row_order(row, bits), np.argsort(row, kind="stable"))
    assert np.array_equal(stable_row_order(row), np.argsort(row, kind="stable"))


@st.composite
def accesses_and_deferred(draw: st.DrawFn) -> tuple[Accesses, np.ndarray]:
    """Transactions of 0-5 bindings each, and which of their accesses are deferred."""
    widths = draw(st.lists(st.integers(0, 5), max_size=30))
    txn = [t for t, width in enumerate(widths) for _ in range(width)]
    rows = draw(st.lists(st.integers(0, 9), min_size=len(txn), max_size=len(txn)))
    deferred = draw(st.lists(st.booleans(), min_size=len(txn), max_size=len(txn)))
    found = Accesses.from_lists(len(widths), txn, rows, [ADD] * len(txn))
    return found, np.array(deferred, dtype=bool)


@settings(max_examples=200, deadline=None)
@given(accesses_and_deferred())
def test_a_transactions_deferred_mask_has_the_bit_of_each_deferred_binding(case):
    accesses, deferred = case
    expected = [0] * accesses.count
    binding = 0
    for i, t in enumerate(accesses.txn.tolist()):
        binding = 0 if i == 0 or accesses.txn[i - 1] != t else binding + 1
        if deferred[i]:
            expected[t] |= 1 << binding
    assert deferred_masks(accesses, deferred).tolist() == expected


# -- planning again until no deferred row overflows ------------------------------------------


@given(waves=st.lists(st.frozensets(st.integers(0, 50), min_size=1), max_size=5))
def test_a_batch_is_planned_again_with_each_overflowing_row_forced(
    waves: list[frozenset[int]],
) -> None:
    """Each attempt forces every row that overflowed before it; the last one's result comes
    back with the number of plans made again."""
    forced_seen: list[frozenset[int]] = []
    fresh = [wave - frozenset().union(*waves[:i]) for i, wave in enumerate(waves)]
    overflows = [wave for wave in fresh if wave]

    def attempt(forced: frozenset[int]) -> tuple[str | None, frozenset[int]]:
        forced_seen.append(forced)
        attempt_no = len(forced_seen) - 1
        if attempt_no < len(overflows):
            return None, overflows[attempt_no]
        return "ran", frozenset()

    assert replanned(attempt) == ("ran", len(overflows))
    assert forced_seen == [frozenset().union(*overflows[:i]) for i in range(len(overflows) + 1)]


def test_a_forced_row_that_overflows_again_fails_loudly_instead_of_looping() -> None:
    def attempt(forced: frozenset[int]) -> tuple[None, frozenset[int]]:
        return None, frozenset({7})

    with pytest.raises(AssertionError, match="forced rows overflowed again"):
        replanned(attempt)
