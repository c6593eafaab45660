"""One way to time work: a `Stopwatch` charges the time between its laps to named steps.

Every timing the platform reports (a batch's phases on the driver and in each Spark task, a
commit's steps, an audit's parts, reconciliation's phases, a command's wall time) comes from
one of these, so that "seconds" means one thing: wall seconds of `time.perf_counter`, and,
where the watch is given a CPU clock (`time.thread_time` for the thread that runs a batch,
`time.process_time` in a task), CPU seconds of that clock beside them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class Stopwatch:
    """Wall (and, with a `cpu` clock, CPU) seconds since it started and by step.

    `lap(step)` charges the time since the previous lap (or the start) to `step`, adding to
    what `step` was charged before; `timed(step)` charges a block's time alone. The charges go
    to `seconds` and `cpu_seconds`, dictionaries of the caller's where given."""

    def __init__(
        self,
        cpu: Callable[[], float] | None = None,
        seconds: dict[str, float] | None = None,
        cpu_seconds: dict[str, float] | None = None,
    ) -> None:
        self.seconds: dict[str, float] = {} if seconds is None else seconds
        self.cpu_seconds: dict[str, float] = {} if cpu_seconds is None else cpu_seconds
        self._cpu = cpu
        self._started = self._last = time.perf_counter()
        self._started_cpu = self._last_cpu = cpu() if cpu is not None else 0.0

    def elapsed(self) -> float:
        """Wall seconds since the watch started."""
        return time.perf_counter() - self._started

    def cpu_elapsed(self) -> float:
        """CPU seconds since the watch started (0 without a CPU clock)."""
        return self._cpu() - self._started_cpu if self._cpu is not None else 0.0

    def lap(self, step: str) -> float:
        """Charge the time since the previous lap to `step`; its wall seconds."""
        now = time.perf_counter()
        wall = now - self._last
        self.seconds[step] = self.seconds.get(step, 0.0) + wall
        self._last = now
        if self._cpu is not None:
            cpu = self._cpu()
            self.cpu_seconds[step] = self.cpu_seconds.get(step, 0.0) + cpu - self._last_cpu
            self._last_cpu = cpu
        return wall

    def resume(self) -> None:
        """Start the next lap now: the time since the previous lap is charged to no step (a
        profiler's own time, between two phases it watches)."""
        self._last = time.perf_counter()
        if self._cpu is not None:
            self._last_cpu = self._cpu()

    @contextmanager
    def timed(self, step: str) -> Iterator[None]:
        """Charge the wall seconds of the block to `step` (laps are not moved)."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[step] = self.seconds.get(step, 0.0) + time.perf_counter() - started
