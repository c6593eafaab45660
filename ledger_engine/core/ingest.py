"""Turning landed event files into an ordered list of lines, each parsed or explained.

A file holds one JSON envelope per line: `{"stream": ..., "request_id": ..., "payload": {...}}`.
A batch's order depends only on the data: files by path, then lines by number (docs/contract.md,
point 2). Lines end at `\\n`; one `\\r` before it is part of the line ending. A line holding
nothing but JSON whitespace (space, tab, `\\r`) is blank: skipped and not counted. The last
line needs no `\\n` (JSON Lines allows that). A UTF-8 byte order mark at the start of a line
is ignored (RFC 8259 lets a parser do so).

Every other line becomes an `Event` for the runner, which judges its content, or is kept raw
and rejected as `invalid_event` with a sentence saying why: it is not valid UTF-8; it is cut
short (its JSON ends before its object is closed, where more bytes could still make it JSON, as
when a file is read while still being written: `core.json_prefix`); it is not JSON (its syntax
is broken before its end), or uses `NaN`/`Infinity`, or repeats a key within an object; it
is not an object; its envelope lacks one of the three fields or has another; or it nests
arrays and objects deeper than the engine stores (`storable.MAX_NESTING`, plus the envelope).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import msgspec

from ledger_engine.core.declarations import PayloadFields
from ledger_engine.core.json_prefix import cut_short
from ledger_engine.core.records import INT64_MAX, INT64_MIN, Event
from ledger_engine.core.storable import MAX_NESTING, brief, json_text_problem, json_type

ENVELOPE = PayloadFields(frozenset({"stream", "request_id", "payload"}))
ENVELOPE_FIELDS = ENVELOPE.required

# JSON's own whitespace; bytes.strip() would also take \x0b and \x0c, which JSON does not.
_JSON_WHITESPACE = b" \t\r"
_BOM = "\ufeff"

# The envelope object is one level more than the payload may nest.
MAX_LINE_NESTING = MAX_NESTING + 1
TOO_DEEP = f"line nests arrays or objects deeper than {MAX_LINE_NESTING} levels"
CUT_SHORT = (
    "line is cut short: it ends before its JSON object is closed "
    "(was the file read while it was still being written?)"
)


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


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object; a key given twice is refused (json.loads would keep the last silently)."""
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return found


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


# Built once: `json.loads` with options builds a decoder on every call.
_DECODER = json.JSONDecoder(object_pairs_hook=_object, parse_constant=_reject_constant)


def parse_line(raw: bytes) -> Event | str:
    """The event on one line, or a sentence saying why there is none.

    Most lines are read by `msgspec`'s decoder, in C, where `_fast_event` can tell that it
    read them as `json` would have; any other line (an escape, a float, a long integer, deep
    nesting, or anything the decoder refuses) goes through `parse_line_fully`, which gives
    every line its verdict. The two agree on every line (tests/engine/test_ingest_fast.py).
    """
    if b"\\" not in raw:
        event = _fast_event(raw)
        if event is not None:
            return event
    return parse_line_fully(raw)


_FAST_DECODE = msgspec.json.Decoder().decode


def _fast_event(raw: bytes) -> Event | None:
    """The event on a line without a backslash, if `msgspec` reads it as `json` does, with
    no key repeated; None for any line that needs a closer look.

    `msgspec` keeps the last of a repeated key where `parse_line_fully` refuses the line.
    Without a backslash, every `"` of a line opens or closes a key or a string value, so a
    line repeats no key exactly when its decoded value holds as many keys and strings as the
    line has quote pairs (`_quoted`).
    """
    try:
        envelope = _FAST_DECODE(raw)
    except (msgspec.MsgspecError, ValueError, RecursionError):  # ValueError: not UTF-8, say
        return None
    if type(envelope) is not dict or envelope.keys() != ENVELOPE_FIELDS:
        return None
    if 2 * _quoted(envelope, MAX_LINE_NESTING) != raw.count(b'"'):
        return None
    return Event(envelope["stream"], envelope["request_id"], envelope["payload"])


def _quoted(value: Any, levels: int) -> int:
    """How many keys and strings `value` holds, if it opens at most `levels` arrays or
    objects and holds no float and no integer beyond int64 (whose reading `parse_line_fully`
    decides); else -1, which no count of quotes matches."""
    kind = type(value)
    if kind is str:
        return 1
    if kind is int:
        return 0 if INT64_MIN <= value <= INT64_MAX else -1
    if kind is bool or value is None:
        return 0
    if levels == 0 or not (kind is dict or kind is list):
        return -1
    count = len(value) if kind is dict else 0
    for item in value.values() if kind is dict else value:
        kind = type(item)  # scalars inline: most objects hold nothing else
        if kind is str:
            count += 1
        elif kind is int:
            if not INT64_MIN <= item <= INT64_MAX:
                return -1
        elif not (kind is bool or item is None):
            inner = _quoted(item, levels - 1)
            if inner < 0:
                return -1
            count += inner
    return count


def parse_line_fully(raw: bytes) -> Event | str:
    """The event on one line, or a sentence saying why there is none: the reading every
    line's verdict comes from (`parse_line` takes a shortcut where it gives the same)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.reason == "unexpected end of data" and exc.end == len(raw):
            # The line stops inside a multi-byte character, which only a string may hold:
            # cut short if the JSON before it stops inside a string (U+FFFD stands for the
            # character: a string may hold it, nothing else in JSON may).
            before = raw[: exc.start].decode("utf-8").removeprefix(_BOM)
            if cut_short(before + "\ufffd"):
                return CUT_SHORT
        return f"line is not valid UTF-8 ({exc.reason} at byte {exc.start})"
    text = text.removeprefix(_BOM)
    try:
        envelope = _DECODER.decode(text)
    except _DuplicateKey as exc:
        return f"line repeats the key {brief(exc.key, 60)} within one object"
    except (RecursionError, ValueError) as exc:  # JSONDecodeError, NaN/Infinity, a long int
        # Where the decoder runs out of stack depends on the caller's stack (a Spark worker's
        # is deeper than a test's), so the verdict must not: a line cut short is cut short,
        # whether or not it nests too deep before its end; else a line nesting too deep is
        # too deep, whatever error the decoder met first.
        if cut_short(text):
            return CUT_SHORT
        if isinstance(exc, RecursionError) or _nests_deeper(text, MAX_LINE_NESTING):
            return TOO_DEEP
        return f"line is not valid JSON ({brief(str(exc), 300, quote=False)})"
    if not isinstance(envelope, dict):
        return f"line must hold a JSON object, not {json_type(envelope)}"
    if _may_nest_deeper(text) and any(json_text_problem(v, "") for v in envelope.values()):
        return TOO_DEEP
    problem = ENVELOPE.problem(envelope, "envelope")
    if problem is not None:
        return problem
    return Event(envelope["stream"], envelope["request_id"], envelope["payload"])


def _may_nest_deeper(text: str) -> bool:
    """A cheap bound: a line with few brackets cannot nest deeply."""
    return text.count("[") + text.count("{") > MAX_LINE_NESTING


# A JSON string (to its closing quote, or to the line's end), or a bracket.
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]')
_OPENING = {"}": "{", "]": "["}


def _nests_deeper(text: str, levels: int) -> bool:
    """True if `text`'s brackets outside strings open more than `levels` deep at some point."""
    if not _may_nest_deeper(text):
        return False
    depth = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token[0] == '"':
            continue
        if token in _OPENING:
            depth -= 1
        else:
            depth += 1
            if depth > levels:
                return True
    return False


def blank(raw: bytes) -> bool:
    """A line of JSON whitespace only (or nothing at all)."""
    return not raw.strip(_JSON_WHITESPACE)


def nonblank_lines(content: bytes) -> Iterator[tuple[int, bytes]]:
    """(line number, raw bytes) of every non-blank line of a file, a trailing CR removed."""
    for number, raw in enumerate(content.split(b"\n"), start=1):
        if not blank(raw):
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


def event_to_line(event: Event) -> str:
    """The event as one compact JSON line (no trailing newline).

    The envelope always has the keys ``stream``, ``request_id`` and ``payload``; a missing
    value is written as ``null``.
    """
    envelope = {"stream": event.stream, "request_id": event.request_id, "payload": event.payload}
    return json.dumps(envelope, separators=(",", ":"), ensure_ascii=False)
