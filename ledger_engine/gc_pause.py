"""Pausing Python's cyclic garbage collector while a batch runs.

A batch allocates millions of small, acyclic objects (events, changes, results) beside a large
long-lived state. The cyclic collector runs a full pass over the whole heap every time enough
objects survive, so with it on, a batch's cost grows faster than its size (about 15% of a
10^6-event serial run, and twice the time of a Spark task that holds its rows). Reference
counting alone frees everything that is not part of a cycle; cycles a transaction function
creates meanwhile are collected once the collector resumes.

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
    """Pause the cyclic collector for the block (re-entrant; restores the previous state)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
