"""Pausing the cyclic collector for a run (`gc_pause.gc_paused`): the collector is off inside,
on again after; what the run leaves behind goes straight to the oldest generation; cycles made
inside are still freed; a process's own frozen objects stay frozen."""

from __future__ import annotations

import gc
import weakref

from ledger_engine.runtime.gc_pause import gc_paused


class Node:
    """A container the collector tracks, which can be put in a cycle."""

    def __init__(self) -> None:
        self.other: Node | None = None


def test_the_collector_is_off_inside_and_on_after() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():  # re-entrant: the inner block leaves it off
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_what_survives_the_block_is_in_the_oldest_generation() -> None:
    with gc_paused():
        survivor = Node()
        assert any(o is survivor for o in gc.get_objects(generation=0))
    assert any(o is survivor for o in gc.get_objects(generation=2))
    assert not any(o is survivor for o in gc.get_objects(generation=0))


def test_a_cycle_made_in_the_block_is_freed_by_a_full_collection() -> None:
    with gc_paused():
        first, second = Node(), Node()
        first.other, second.other = second, first
        gone = weakref.ref(first)
        del first, second
    assert gone() is not None  # a cycle: reference counting alone does not free it
    gc.collect()
    assert gone() is None


def test_a_process_that_froze_objects_keeps_them_frozen() -> None:
    frozen = Node()
    gc.freeze()
    try:
        # `gc.get_objects()` lists the three generations, not the frozen objects.
        assert not any(o is frozen for o in gc.get_objects())
        with gc_paused():
            young = Node()
        assert gc.get_freeze_count() > 0
        assert not any(o is frozen for o in gc.get_objects())
        # Left to the young generations as usual, not frozen with the rest.
        assert any(o is young for o in gc.get_objects(generation=0))
    finally:
        gc.unfreeze()
