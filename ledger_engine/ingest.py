"""Turning landed event files into an ordered list of lines, each parsed or explained.

A file holds one JSON envelope per line: `{"stream": ..., "request_id": ..., "payload": {...}}`.
A batch's order depends only on the data: files by path, then lines by number (DESIGN.md,
point 2). Blank lines are skipped and not counted. A line that is not valid UTF-8, not JSON, not
an object, or that has fields other than the three above is kept raw and rejected as
`invalid_event`; everything else becomes an `Event` for the runner, which judges its content.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ledger_engine.model import Event

ENVELOPE_FIELDS = frozenset({"stream", "request_id", "payload"})


@dataclass(frozen=True)
class IngestedLine:
    """One non-blank line of a batch, at `position` in batch order."""

    position: int
    source_file: str
    line_number: int
    raw: bytes
    event: Event | None
    problem: str | None = None

    def __post_init__(self) -> None:
        assert (self.event is None) != (self.problem is None), "parsed or explained, not both"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_line(raw: bytes) -> Event | str:
    """The event on one line, or a sentence saying why there is none."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"line is not valid UTF-8 ({exc.reason} at byte {exc.start})"
    try:
        envelope = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        return f"line is not valid JSON ({exc})"[:500]
    if not isinstance(envelope, dict):
        return f"line must hold a JSON object, not {type(envelope).__name__}"
    extra = sorted(set(envelope) - ENVELOPE_FIELDS)
    if extra:
        return f"unexpected envelope field(s): {', '.join(map(repr, extra))}"[:500]
    return Event(envelope.get("stream"), envelope.get("request_id"), envelope.get("payload"))


def nonblank_lines(content: bytes) -> Iterator[tuple[int, bytes]]:
    """(line number, raw bytes) of every non-blank line of a file, a trailing CR removed."""
    for number, raw in enumerate(content.split(b"\n"), start=1):
        if raw.strip():
            yield number, raw.removesuffix(b"\r")


def ingest_files(files: Iterable[tuple[str, bytes]]) -> list[IngestedLine]:
    """Every non-blank line of `files` (name, content), in batch order."""
    lines: list[IngestedLine] = []
    for path, content in sorted(files, key=lambda f: f[0]):
        for number, raw in nonblank_lines(content):
            parsed = parse_line(raw)
            event, problem = (parsed, None) if isinstance(parsed, Event) else (None, parsed)
            lines.append(IngestedLine(len(lines), path, number, raw, event, problem))
    return lines
