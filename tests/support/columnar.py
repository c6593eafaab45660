"""Building the input of `run_spark_columnar` and reading its result back for the tests.

A batch is written as landed files of lines: each item an `Event` (written as the platform
writes it) or raw bytes (a line that holds no event), with blank lines between some of them;
`Lines` remembers where each item went, so that a test can name the position, file and line
of every one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from ledger_engine.core.records import Event, RunResult
from ledger_engine.runtime.columnar.result import ColumnarRunResult
from tests.support.events import event_line


@dataclass(frozen=True)
class Placed:
    """An item of a batch: its position, and the file and line number it was written to."""

    position: int
    item: Event | bytes
    file: str
    line: int


@dataclass(frozen=True)
class Lines:
    """A batch as it was written: its files (in batch order) and every item's place."""

    paths: list[Path]
    placed: list[Placed]

    @property
    def events(self) -> list[Event]:
        return [p.item for p in self.placed if isinstance(p.item, Event)]

    @property
    def garbage(self) -> list[Placed]:
        return [p for p in self.placed if isinstance(p.item, bytes)]

    def values(self) -> list[bytes]:
        """Every non-blank line in batch order (what a DataFrame of the batch holds)."""
        return [_bytes(p.item) for p in self.placed]


def _bytes(item: Event | bytes) -> bytes:
    return item if isinstance(item, bytes) else event_line(item)


def write_batch(
    folder: Path, items: Sequence[Event | bytes], cuts: Sequence[int], blank_after: set[int]
) -> Lines:
    """Write `items` into files cut before each index in `cuts` (sorted), with a blank line
    after each item whose index is in `blank_after`."""
    folder.mkdir(parents=True, exist_ok=True)
    bounds = [0, *cuts, len(items)]
    paths: list[Path] = []
    placed: list[Placed] = []
    for number, (lo, hi) in enumerate(pairwise(bounds)):
        name = f"events-{number:04d}.jsonl"
        content = b""
        line = 0
        for index in range(lo, hi):
            line += 1
            content += _bytes(items[index]) + b"\n"
            placed.append(Placed(index, items[index], name, line))
            if index in blank_after:
                line += 1
                content += b"  \n"
        path = folder / name
        path.write_bytes(content)
        paths.append(path)
    return Lines(paths, placed)


def record_view_of_events(result: ColumnarRunResult, ledger, lines: Lines, start) -> RunResult:
    """The record view of `result` without the garbage lines, its positions those of the
    events among themselves: what `run_serial` gives for `lines.events` alone."""
    stand_in = Event(None, None, None)
    view = result.to_run_result(
        ledger, [p.item if isinstance(p.item, Event) else stand_in for p in lines.placed], start
    )
    garbage = {p.position for p in lines.garbage}
    rejected = [o.position for o in view.outcomes if o.status == "rejected"]
    assert len(rejected) == len(view.rejections), "one rejection per rejected outcome"
    view.rejections = [
        r for position, r in zip(rejected, view.rejections, strict=True) if position not in garbage
    ]
    events_only = [o for o in view.outcomes if o.position not in garbage]
    view.outcomes = [o._replace(position=i) for i, o in enumerate(events_only)]
    return view
