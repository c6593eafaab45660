"""Pausing Python's cyclic garbage collector while a batch runs.

A batch allocates millions of small, acyclic objects (events, changes, results) beside a large
long-lived state. The cyclic collector runs a full pass over the whole heap every time enough
objects survive, so with it on, a batch's cost grows faster than its size (about 15% of a
10^6-event serial run, and twice the time of a Spark task that holds its rows). Reference
counting alone frees everything that is not part of a cycle.

What survives the block is mostly the run's result: records that live as long as the caller
keeps them. Left in the youngest generation, they would all be walked by the first young
collection after the block (3.4 s for the 7x10^6 records of 10^6 transfers: a named tuple is
never untracked by the collector, unlike a plain tuple), and again on their way through the
middle one. So the block ends by moving every object the collector tracks into the oldest
generation (`gc.freeze()` then `gc.unfreeze()`: two list splices, no walk), where only full
collections look at them. The price: a cycle that code made during the block (a transaction
function's, say) is freed at the next full collection instead of the next young one. A process
that froze objects of its own (`gc.get_freeze_count()`) is left as it was, and its survivors
go through the young generations as before.

Code run inside the block must not turn the collector back on: PySpark's broadcast loading
does (it disables and then unconditionally enables it), so Spark tasks load their broadcasts
before pausing.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block, then hand what survives it to the oldest
    generation (re-entrant: only the outermost block resumes and hands over)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            _promote_survivors()
            gc.enable()


def _promote_survivors() -> None:
    """Move every tracked object into the oldest generation without walking them, unless the
    process keeps objects frozen (unfreezing would release those too)."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()
