"""No input crashes the ingest path: generated files of arbitrary bytes, mutated valid lines and
JSON envelopes of random types, nesting and unicode.

In process and fast (hundreds of examples): the reference (`ingest_files` then `run_serial`)
and the Spark screening task give every non-blank line exactly one outcome, keep every
rejected line's bytes, and give the same outcome on replay. Through Spark and PostgreSQL (a
few examples, one database, consecutive batches): every batch commits, its counts add up,
every rejected line's raw bytes are stored exactly, and the stored state and results equal the
serial runner over all events committed so far.

The reference shares the engine's parser, so what is a line and what is an envelope is also
judged apart from it: lines are split here (`line_bytes`), and a judge written from the
format's rules with Python's json module (`envelope_verdict`) must agree with the parser on
every generated line it is sure of.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine

from ledger_engine.apps.bank.ledger import (
    DEPOSIT_FIELDS,
    FEE_TRANSFER_FIELDS,
    LOOKUP_FIELDS,
    TRANSFER_FIELDS,
    build_ledger,
)
from ledger_engine.core.ingest import ingest_files
from ledger_engine.core.records import APPLIED, DUPLICATE, REJECTED, Event
from ledger_engine.runtime.columnar import parcels as P
from ledger_engine.runtime.columnar.admission import positions_of, unit_offsets
from ledger_engine.runtime.columnar.screening import COUNTS_SCHEMA, ENDED_SCHEMA, LINES_SCHEMA
from ledger_engine.runtime.spark.tasks import screen_contents_task
from tests.support.batch_oracle import (
    expected_batch,
    stored_bank_state,
    stored_batch,
    stored_counts,
    stored_results,
)
from tests.support.database import rows
from tests.support.events import nested

LEDGER = build_ledger()

FIELDS = {
    "deposits": DEPOSIT_FIELDS,
    "transfers": TRANSFER_FIELDS,
    "fee_transfers": FEE_TRANSFER_FIELDS,
    "balance_lookups": LOOKUP_FIELDS,
}
ACCOUNTS = ["acct-a", "acct-b", "acct-c"]
ASSETS = ["asset-a", "asset-b", "asset-c"]
TOO_LONG = "é" * 513  # 1,026 bytes: too long for a request id or key (a B-tree entry)
DEEP_ENVELOPE = b'{"stream":"deposits","request_id":"r1","payload":{"account_id":%s}}'

# -- generated input ---------------------------------------------------------------------------

# Every code point, lone surrogates included (json.dumps escapes them, or they make bad UTF-8).
any_text = st.text(st.characters(exclude_categories=()), max_size=6)
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats()  # NaN and infinities included
    | any_text
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(any_text, inner, max_size=3),
    max_leaves=8,
)
amounts = st.integers(1, 500) | st.sampled_from([0, -3, 2**63, 10**30, 2.5, "7", None])


@st.composite
def field_values(draw: st.DrawFn, field: str) -> Any:
    """A plausible value for a bank field, now and then anything at all."""
    if draw(st.integers(0, 9)) == 0:
        return draw(json_values | st.just(TOO_LONG))
    if field.endswith("account_id"):
        return draw(st.sampled_from(ACCOUNTS))
    if field.endswith("asset_id"):
        return draw(st.sampled_from(ASSETS))
    return draw(amounts)


@st.composite
def payloads(draw: st.DrawFn, stream: str) -> Any:
    """A bank payload, often valid, else with a field dropped, added, renamed or deepened."""
    names = sorted(FIELDS.get(stream, DEPOSIT_FIELDS))
    payload = {name: draw(field_values(name)) for name in names}
    mutation = draw(st.sampled_from(["none"] * 4 + ["drop", "add", "rename", "deep", "other"]))
    if mutation == "drop":
        del payload[draw(st.sampled_from(names))]
    elif mutation == "add":
        payload[draw(st.sampled_from(["min_balance", "memo", "ammount"]) | any_text)] = draw(
            json_values
        )
    elif mutation == "rename":
        name = draw(st.sampled_from(names))
        payload[name + draw(st.sampled_from(["s", "_", " "]))] = payload.pop(name)
    elif mutation == "deep":
        levels = draw(st.sampled_from([1, 62, 63, 64, 65]))  # deeper: see `lines`
        payload[draw(st.sampled_from(names))] = nested(levels, draw(scalars))
    elif mutation == "other":
        return draw(json_values)
    return payload


@st.composite
def envelopes(draw: st.DrawFn) -> dict[str, Any]:
    stream = draw(st.sampled_from([*FIELDS, "withdrawals"]) | json_values)
    envelope = {
        "stream": stream,
        # A few ids, so that retries and clashes happen within and across batches.
        "request_id": draw(
            st.sampled_from(["r1", "r2", "r3", "r4", "r5"]) | json_values | st.just(TOO_LONG)
        ),
        "payload": draw(payloads(stream if isinstance(stream, str) else "deposits")),
    }
    change = draw(st.sampled_from(["none"] * 6 + ["drop", "add"]))
    if change == "drop":
        del envelope[draw(st.sampled_from(sorted(envelope)))]
    elif change == "add":
        envelope[draw(any_text)] = draw(json_values)
    return envelope


@st.composite
def json_lines(draw: st.DrawFn) -> bytes:
    """An envelope written as JSON in one of several styles."""
    envelope = draw(envelopes())
    text = json.dumps(
        envelope,
        ensure_ascii=draw(st.booleans()),
        separators=draw(st.sampled_from([(",", ":"), (", ", ": ")])),
        indent=draw(st.sampled_from([None] * 9 + [1])),  # a multi-line object now and then
    )
    # A lone surrogate written as UTF-8 is not UTF-8.
    return text.encode("utf-8", "surrogatepass")


@st.composite
def mutated(draw: st.DrawFn, line: bytes) -> bytes:
    """`line` with a few bytes cut, inserted, deleted or changed, or a byte order mark."""
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(line)))
        edit = draw(st.sampled_from(["cut", "insert", "delete", "bom", "cr"]))
        if edit == "cut":
            line = line[:at]
        elif edit == "insert":
            line = line[:at] + draw(st.binary(min_size=1, max_size=3)) + line[at:]
        elif edit == "delete":
            line = line[:at] + line[at + draw(st.integers(1, 3)) :]
        elif edit == "bom":
            line = b"\xef\xbb\xbf" + line
        else:
            line = line + b"\r"
    return line


@st.composite
def lines(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["json"] * 4 + ["mutated"] * 2 + ["bytes", "blank", "deep"]))
    if kind == "json":
        return draw(json_lines())
    if kind == "mutated":
        return draw(mutated(draw(json_lines())))
    if kind == "blank":
        return draw(st.sampled_from([b"", b" ", b"\t\r", b"\x0c", b"\xef\xbb\xbf", b"null"]))
    if kind == "deep":  # written by hand: json.dumps recurses
        levels = draw(st.sampled_from([63, 64, 65, 66, 500, 5_000]))
        inner = b"[" * levels + b"1" + b"]" * levels
        return draw(st.sampled_from([inner, DEEP_ENVELOPE % inner]))
    return draw(st.binary(max_size=40))


@st.composite
def files(draw: st.DrawFn, min_lines: int = 0) -> list[tuple[str, bytes]]:
    """1 to 3 files of up to 5 lines each (at least `min_lines`); some end without a newline
    or are cut mid-write."""
    found = []
    for index in range(draw(st.integers(1, 3))):
        separator = draw(st.sampled_from([b"\n", b"\r\n"]))
        content = separator.join(draw(st.lists(lines(), min_size=min_lines, max_size=5)))
        ending = draw(st.sampled_from(["newline", "none", "cut"]))
        if ending == "newline":
            content += separator
        elif ending == "cut" and content:
            content = content[: draw(st.integers(0, len(content) - 1))]
        found.append((f"{index}-{draw(st.sampled_from(['a', 'b']))}.jsonl", content))
    return found


# -- checks ------------------------------------------------------------------------------------


def line_bytes(files: list[tuple[str, bytes]]) -> dict[tuple[str, int], bytes]:
    """Each non-blank line's bytes, split from the files here rather than by the engine."""
    found = {}
    for name, content in files:
        for number, raw in enumerate(content.split(b"\n"), start=1):
            if raw.strip(b" \t\r"):
                found[name, number] = raw[:-1] if raw.endswith(b"\r") else raw
    return found


# -- an envelope judged apart from the engine's parser ------------------------------------------

ENVELOPE_KEYS = {"stream", "request_id", "payload"}
DEEPEST = 65  # levels a line may nest: the payload's 64 (storable.MAX_NESTING), and the envelope
INVALID, ENVELOPE, UNSURE = "invalid", "envelope", "unsure"


class _Refused(ValueError):
    """What Python's json accepts and an envelope may not hold."""


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise _Refused("a key repeated within an object")
    return dict(pairs)


def _no_constant(name: str) -> Any:
    raise _Refused(f"{name} is not JSON")


def _depth(value: Any) -> int:
    """How deep `value` nests arrays and objects (iteratively: it may nest without bound)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        )
        for child in children:
            if isinstance(child, dict | list):
                stack.append((child, level + 1))
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
    return deepest


def _beyond_the_format(value: Any) -> bool:
    """Whether `value` holds a float or an integer outside int64 (anywhere in it)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) or (
            isinstance(item, int) and not isinstance(item, bool) and not -(2**63) <= item < 2**63
        ):
            return True
        if isinstance(item, dict | list):
            stack += list(item.values() if isinstance(item, dict) else item)
    return False


def envelope_verdict(raw: bytes) -> str:
    """Whether a non-blank line is an event envelope, judged here from the format's rules
    (`core.ingest`'s docstring) with Python's own json module: `INVALID` (not UTF-8, not JSON,
    NaN or Infinity, a repeated key, not an object, another set of fields, nested too deep),
    `ENVELOPE`, or `UNSURE` for what this judge leaves to the engine's own tests (lone
    surrogates, numbers beyond what a payload stores)."""
    line = raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw  # a BOM is ignored
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return INVALID
    if re.search(r"\\u[dD][89a-fA-F]", text):
        return UNSURE  # an escaped surrogate: JSON text, but no storable string
    try:
        value = json.loads(text, object_pairs_hook=_no_repeats, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return INVALID
    if not isinstance(value, dict) or set(value) != ENVELOPE_KEYS:
        return INVALID
    if _depth(value) > DEEPEST:
        return INVALID
    if _beyond_the_format(value):
        return (
            UNSURE  # a float or an integer past int64: the engine's range rules, not the format's
        )
    return ENVELOPE


def assert_envelopes_judged_apart(files: list[tuple[str, bytes]]) -> None:
    """The engine's parser (`ingest_files`) takes a line as an event exactly where the judge
    above, written apart from it, sees an envelope."""
    for line in ingest_files(files):
        verdict = envelope_verdict(line.raw)
        if verdict == INVALID:
            assert line.event is None, (line.raw, "taken as an event")
        elif verdict == ENVELOPE:
            assert line.event is not None, (line.raw, line.problem)


def assert_every_line_ends_once(files: list[tuple[str, bytes]], expected: Any) -> None:
    # The lines split here, apart from the engine (`line_bytes`), in batch order.
    raw = line_bytes(files)
    order = [(name, n) for name, _ in sorted(files) for (f, n) in sorted(raw) if f == name]
    assert [(x.source_file, x.line_number) for x in expected.lines] == order
    for x in expected.lines:
        assert x.outcome in (APPLIED, REJECTED, DUPLICATE)
        if x.outcome == REJECTED:
            assert x.raw == raw[x.source_file, x.line_number]
            assert x.reason and x.detail
            assert "\x00" not in x.detail
            x.detail.encode("utf-8")  # storable: no lone surrogates
        else:
            assert x.raw is None and x.reason is None
        assert (x.kind is not None) == (x.outcome == DUPLICATE)


def spark_screening(files: list[tuple[str, bytes]]) -> tuple[pa.Table, pa.Table]:
    """The pipeline's screening task run in process over `files`: every line as the journal
    keeps it, and the lines screening ended, each with its batch position (files by name)."""
    names = sorted(name for name, _ in files)
    contents = dict(files)
    batch = pa.record_batch(
        {
            "name": pa.array(names, pa.string()),
            "content": pa.array([contents[n] for n in names], pa.binary()),
        }
    )
    task = screen_contents_task(LEDGER, {name: unit for unit, name in enumerate(names)})
    opened = list(P.unpacked(task(iter([batch]))))

    def table(kind: int, schema: pa.Schema) -> pa.Table:
        return P.concatenated([t for k, _, _, t in opened if k == kind], schema)

    offsets = unit_offsets(table(P.COUNT, COUNTS_SCHEMA), len(names))
    lines, ended = table(P.LINES, LINES_SCHEMA), table(P.ENDED, ENDED_SCHEMA)
    return (
        lines.append_column("position", pa.array(positions_of(lines, offsets))),
        ended.append_column("position", pa.array(positions_of(ended, offsets))),
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files=files())
def test_no_input_crashes_ingest_screening_or_the_serial_runner(files):
    expected = expected_batch(LEDGER, files)

    assert_every_line_ends_once(files, expected)
    assert_envelopes_judged_apart(files)
    assert expected_batch(LEDGER, files) == expected  # the same outcome on replay
    lines, ended = spark_screening(files)
    lines = lines.sort_by("position").to_pydict()
    assert lines["position"] == list(range(len(expected.lines)))
    assert lines["raw"] == [line_bytes(files)[x.source_file, x.line_number] for x in expected.lines]
    assert [(f, n) for f, n in zip(lines["source_file"], lines["line_number"], strict=True)] == [
        (x.source_file, x.line_number) for x in expected.lines
    ]
    ended = ended.to_pydict()
    for position, reason, detail in zip(
        ended["position"], ended["reason"], ended["detail"], strict=True
    ):
        x = expected.lines[position]
        if x.outcome == REJECTED:  # ended by screening, and not a duplicate of an earlier id
            assert (reason, detail) == (x.reason, x.detail)


def next_batch_id(engine: Engine) -> int:
    ((found,),) = rows(engine, "SELECT coalesce(max(batch_id) + 1, 0) FROM ledger_batches")
    return found


def test_fuzzed_batches_commit_through_spark_and_postgres(engine, commit_files):
    committed: list[Event] = []  # every event of the batches committed so far, in order

    @settings(
        max_examples=9,  # and the explicit example: ten batches
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(files=files(min_lines=2))  # each batch costs seconds: make it count
    @example(files=[("empty.jsonl", b""), ("blank.jsonl", b"\n \r\n")])  # a batch of no lines
    def one_batch(files):
        batch_id = next_batch_id(engine)
        named = [(f"{batch_id:04d}-{name}", content) for name, content in files]
        expected = expected_batch(LEDGER, named, committed)

        summary = commit_files(engine, batch_id, named)
        committed.extend(x.event for x in ingest_files(named) if x.event is not None)

        assert summary.committed
        assert stored_batch(engine, batch_id) == expected.lines
        counts = (summary.ingested, summary.applied, summary.rejected, summary.duplicates)
        assert counts == stored_counts(engine, batch_id)
        assert summary.ingested == len(expected.lines)
        assert summary.ingested == summary.applied + summary.rejected + summary.duplicates
        assert stored_bank_state(engine) == expected.result.state
        assert stored_results(engine) == [
            (r.stream, r.request_id, r.payload) for r in expected.result.results
        ]

    one_batch()


VALID = b'{"stream":"deposits","request_id":"r1","payload":{"account_id":"a","amount":5}}'
JUDGED = {
    VALID: ENVELOPE,
    b"\xef\xbb\xbf" + VALID: ENVELOPE,  # a byte order mark is ignored
    DEEP_ENVELOPE % (b"[" * 63 + b"1" + b"]" * 63): ENVELOPE,  # 65 levels
    DEEP_ENVELOPE % (b"[" * 64 + b"1" + b"]" * 64): INVALID,  # 66
    b'{"stream":"deposits","request_id":"r1"}': INVALID,  # a field missing
    b'{"stream":"d","request_id":"r","payload":{},"x":1}': INVALID,  # a field more
    b'{"stream":"d","stream":"e","request_id":"r","payload":{}}': INVALID,  # a key twice
    b'{"stream":"d","request_id":"r","payload":{"amount":NaN}}': INVALID,
    b'["stream","request_id","payload"]': INVALID,
    b'{"stream":"d","request_id":"r","payload":{}': INVALID,  # cut short
    b'{"stream":"d\xff","request_id":"r","payload":{}}': INVALID,  # not UTF-8
    b'{"stream":"d","request_id":"\\ud800","payload":{}}': UNSURE,
}


def test_the_judge_of_envelopes_reads_the_format_as_the_engine_does() -> None:
    """A control of the judge itself: on lines whose verdict is known, it gives that verdict,
    and the engine's parser agrees."""
    assert {line: envelope_verdict(line) for line in JUDGED} == JUDGED
    named = [("judged.jsonl", b"\n".join(JUDGED))]
    taken = {line.raw: line.event is not None for line in ingest_files(named)}
    known = {line: verdict for line, verdict in JUDGED.items() if verdict != UNSURE}
    assert {line: taken[line] for line in known} == {
        line: verdict == ENVELOPE for line, verdict in known.items()
    }
