"""One way to time work (`core.stopwatch.Stopwatch`): laps charge the time between them to
their steps, adding up per step; a timed block charges its own time; what `resume` skips is
charged to no step; a CPU clock given is read at the same points as the wall clock."""

from __future__ import annotations

import time
from itertools import count

from ledger_engine.core.stopwatch import Stopwatch


def test_laps_charge_the_time_between_them_to_their_steps() -> None:
    watch = Stopwatch()
    time.sleep(0.01)
    first = watch.lap("read")
    time.sleep(0.01)
    watch.lap("write")
    again = watch.lap("read")

    assert set(watch.seconds) == {"read", "write"}
    assert watch.seconds["read"] == first + again, "a step's laps add up"
    assert first >= 0.01 and watch.seconds["write"] >= 0.01
    assert sum(watch.seconds.values()) <= watch.elapsed()


def test_a_timed_block_and_a_resumed_lap_leave_the_other_steps_alone() -> None:
    watch = Stopwatch()
    with watch.timed("query"):
        time.sleep(0.01)
    watch.resume()  # the block's time is charged to "query" alone
    watch.lap("render")

    assert watch.seconds["query"] >= 0.01
    assert watch.seconds["render"] < watch.seconds["query"]


def test_a_cpu_clock_is_charged_beside_the_wall_clock() -> None:
    ticks = count(100)  # each reading one second later
    shared: dict[str, float] = {}
    watch = Stopwatch(lambda: float(next(ticks)), cpu_seconds=shared)  # read once: 100

    watch.lap("a")  # 101
    watch.lap("b")  # 102
    watch.lap("a")  # 103
    watch.resume()  # 104, charged to no step
    watch.lap("b")  # 105

    assert shared == {"a": 2.0, "b": 2.0}
    assert watch.cpu_elapsed() == 6.0  # 106 - 100
    assert Stopwatch().cpu_elapsed() == 0.0, "no CPU clock, no CPU time"
