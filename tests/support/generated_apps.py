"""Generated ledgers and workloads for checking parallel runners against the serial runner.

A generated ledger has one to three tables (int, str or dict values; str or int keys) and one
to three streams whose bindings use every access type, sometimes name one row twice (two bindings
reading the same key field), and sometimes only read. Every stream runs the same transaction
function, `interpret`, which executes the small program carried in the event's payload:

    {"k0": 3, "k1": 0, ..., "ops": [["read", "b0"], ["add", "b1", 5], ["write", "b0", 2], ...]}

so a workload decides what each transaction reads, writes, adds, deletes, emits, and whether
it aborts, raises, overflows or breaks its access type. Keys come from a small, Zipf-skewed key
space, so hot rows are common. Workloads also carry retries and clashes of earlier request ids,
events without request ids, unknown streams and missing key fields.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from functools import cache
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from ledger_engine import AccessType, Event, StreamingLedger
from ledger_engine.core.invariants import balanced, conserved, minimum
from ledger_engine.core.records import INT64_MAX

KEY_FIELDS = ("k0", "k1", "k2", "k3")
FEE_FIELD = "fee"  # always key 0: a hot row, often only ever added to
HUGE = INT64_MAX // 2 + 1  # two of these overflow an int64
VALUE_TYPES = {"int": int, "str": str, "dict": dict}


@dataclass(frozen=True)
class TableSpec:
    name: str
    key_type: type
    value_type: type


@dataclass(frozen=True)
class BindingSpec:
    table: int  # index into the tables
    field: str  # the payload field holding the key
    access: AccessType


@dataclass(frozen=True)
class AppSpec:
    tables: tuple[TableSpec, ...]
    streams: tuple[tuple[BindingSpec, ...], ...]


@dataclass(frozen=True)
class Workload:
    app: AppSpec
    state: dict[str, dict[Any, Any]]
    events: list[Event]


def known_after(events: list[Event]) -> dict[str, str]:
    """The request ids a committed run of `events` leaves known, with their fingerprints."""
    known: dict[str, str] = {}
    for event in events:
        if isinstance(event.request_id, str) and event.request_id:
            known.setdefault(event.request_id, event.fingerprint())
    return known


# -- the transaction function ------------------------------------------------------------------


def _as(value_type: type, number: int) -> Any:
    """A value of `value_type` made from `number`."""
    if value_type is int:
        return number
    if value_type is str:
        return f"v{number}"
    return {"v": number, "tags": [number % 3]}


def _number(value: Any) -> int:
    """The number a stored value carries (0 for an absent row)."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        return int(value[1:])
    return value["v"]


def interpret(event: dict[str, Any], ctx, **rows) -> None:
    """Run the operations in `event["ops"]` against the bound rows."""
    total = 0
    for op in event["ops"]:
        name = op[0]
        if name == "read":
            total += _number(rows[op[1]].read())
        elif name == "write":
            kind = VALUE_TYPES[event["types"][op[1]]]
            rows[op[1]].write(_as(kind, (total + op[2]) % 1_000_000))
        elif name == "write_wrong_type":
            rows[op[1]].write(1.5)  # no table holds floats
        elif name == "add":
            rows[op[1]].add(op[2])
        elif name == "delete":
            rows[op[1]].delete()
        elif name == "emit":
            ctx.emit({"total": total, "tag": op[1]})
        elif name == "emit_shape":
            ctx.emit(RESULT_SHAPES[op[1]])
        elif name == "abort":
            ctx.abort(f"aborted at total {total}")
        elif name == "raise":
            raise ValueError(f"boom at total {total}")
        elif name == "abort_if_negative" and total < 0:
            ctx.abort("negative")


def _key_function(field: str, key_type: type):
    if key_type is int:

        def int_key(event: dict[str, Any]) -> Any:
            return event[field]

        return int_key

    def str_key(event: dict[str, Any]) -> Any:
        value = event[field]
        return None if value is None else f"r{value}"

    return str_key


@dataclass(frozen=True)
class Names:
    """The labels of a generated ledger, its tables and its streams (by index)."""

    ledger: str
    table_pattern: str  # formatted with the table's index
    stream_pattern: str  # formatted with the stream's index

    def table(self, index: int) -> str:
        return self.table_pattern.format(index)

    def stream(self, index: int) -> str:
        return self.stream_pattern.format(index)

    def events(self, events: list[Event]) -> list[Event]:
        """`events` (drawn with streams `s0`, `s1`, ...) with this ledger's stream labels;
        an unknown stream stays unknown."""
        renamed = {f"s{s}": self.stream(s) for s in range(8)}
        return [Event(renamed.get(e.stream, e.stream), e.request_id, e.payload) for e in events]


PLAIN_NAMES = Names("generated", "t{}", "s{}")
# Labels that would break any SQL they were pasted into, and that no identifier rule allows.
HOSTILE_NAMES = Names(
    "Generated «ledger» 'ü'; DROP TABLE ledger_events; --",
    'Table {} "quoted" O\'Brien € 口座',
    "Stream {}: 'ü' \\ \"x\"",
)


def build_ledger(app: AppSpec, names: Names | None = None) -> StreamingLedger:
    """The ledger of `app`: tables `t0`, `t1`, ... and streams `s0`, `s1`, ..., or the labels
    of `names`."""
    names = names or PLAIN_NAMES
    ledger = StreamingLedger.create(names.ledger)
    tables = [
        ledger.declare_state(names.table(i), t.key_type, t.value_type)
        for i, t in enumerate(app.tables)
    ]
    for s, bindings in enumerate(app.streams):
        declaration = ledger.using_stream(names.stream(s)).apply(interpret)
        for b, spec in enumerate(bindings):
            table = tables[spec.table]
            declaration.on(table, _key_function(spec.field, table.key_type), f"b{b}", spec.access)
    ledger.check()
    return ledger


# -- strategies ----------------------------------------------------------------------------


@st.composite
def audited_ledgers(draw: st.DrawFn) -> StreamingLedger:
    """A generated ledger, under plain or hostile labels, with invariants the audits check:
    on each table of integers, now and then a minimum, a conserved total (over a stream's
    `k0`) and a balanced rule, each under its default name or one drawn."""
    app = draw(app_specs())
    names = draw(st.sampled_from([PLAIN_NAMES, HOSTILE_NAMES]))
    ledger = build_ledger(app, names)
    streams = [names.stream(s) for s in range(len(app.streams))]
    letters = st.characters(codec="utf-8", exclude_categories=("Cs", "Cc"))
    label = st.text(letters, min_size=1, max_size=30)
    named = st.one_of(st.none(), label.map(str.strip).filter(bool))
    for index, table in enumerate(app.tables):
        if table.value_type is not int:
            continue
        name = names.table(index)
        moving = sorted(draw(st.sets(st.sampled_from(streams), min_size=1)))
        chosen = [
            minimum(name, draw(st.integers(-5, 5)), draw(named)),
            conserved(name, {draw(st.sampled_from(streams)): "k0"}, draw(named)),
            balanced(name, moving, draw(named)),
        ]
        for invariant in chosen:
            taken = {i.sql_name for i in ledger.invariants.values()}
            if draw(st.booleans()) and invariant.sql_name not in taken:
                ledger.declare_invariant(invariant)
    ledger.check()
    return ledger


def zipf_index(size: int, skew: float) -> st.SearchStrategy[int]:
    """An index in [0, size) drawn with probability proportional to 1 / (index + 1) ** skew."""
    weights = [1 / (i + 1) ** skew for i in range(size)]
    cumulative = []
    running = 0.0
    for w in weights:
        running += w
        cumulative.append(running / sum(weights))
    return st.floats(0, 1, exclude_max=True).map(
        lambda u: min(bisect.bisect_right(cumulative, u), size - 1)
    )


table_specs = st.builds(
    TableSpec,
    name=st.just(""),
    key_type=st.sampled_from([str, str, int]),
    value_type=st.sampled_from([int, int, int, str, dict]),
)


@st.composite
def app_specs(draw: st.DrawFn) -> AppSpec:
    count = draw(st.integers(1, 3))
    tables = tuple(
        TableSpec(f"t{i}", spec.key_type, spec.value_type)
        for i, spec in enumerate(draw(st.lists(table_specs, min_size=count, max_size=count)))
    )
    streams = []
    for _ in range(draw(st.integers(1, 3))):
        read_only = draw(st.booleans().map(lambda b: b and draw(st.integers(0, 3)) == 0))
        bindings = []
        for _ in range(draw(st.integers(0, 4))):
            table = draw(st.integers(0, len(tables) - 1))
            accesses = [AccessType.READ, AccessType.WRITE, AccessType.READ_WRITE]
            if tables[table].value_type is int:
                accesses += [AccessType.ADD, AccessType.ADD]
            access = AccessType.READ if read_only else draw(st.sampled_from(accesses))
            field = draw(st.sampled_from(KEY_FIELDS))
            if access is AccessType.ADD and draw(st.booleans()):
                field = FEE_FIELD
            bindings.append(BindingSpec(table, field, access))
        streams.append(tuple(bindings))
    return AppSpec(tables, tuple(streams))


def _deltas() -> st.SearchStrategy[int]:
    """Mostly small deltas; now and then one of a pair that together overflow int64."""
    return st.integers(0, 9).flatmap(
        lambda i: st.sampled_from([HUGE, -HUGE]) if i == 0 else st.integers(-30, 60)
    )


def _fitting(name: str, access: AccessType) -> st.SearchStrategy[list]:
    """An operation the binding's access type allows."""
    read = st.just(["read", name])
    write = st.tuples(st.just("write"), st.just(name), st.integers(-50, 50)).map(list)
    add = st.tuples(st.just("add"), st.just(name), _deltas()).map(list)
    delete = st.just(["delete", name])
    return {
        AccessType.READ: read,
        AccessType.WRITE: st.one_of(write, write, delete),
        AccessType.READ_WRITE: st.one_of(read, write, add, delete),
        AccessType.ADD: add,
    }[access]


def _breaking(name: str) -> st.SearchStrategy[list]:
    """An operation that may break the binding's access type or the table's value type."""
    return st.sampled_from(
        [
            ["read", name],
            ["write", name, 1],
            ["delete", name],
            ["add", name, 1],
            ["write_wrong_type", name],
        ]
    )


# Results of other shapes than a flat object of text and integers, which a runner must give
# back equal: nested, a tuple, floats, an integer beyond int64, text beyond ASCII, scalars.
RESULT_SHAPES: tuple[Any, ...] = (
    {"nested": {"list": [1, "a", None, True], "deeper": {"x": -1}}},
    {"pair": (1, 2)},
    {"ratio": 0.1, "whole": 2.0, "tiny": -5e-324},
    {"big": 2**70, "small": -(2**64)},
    {"text": "été ✓"},
    [1, 2.5, "x"],
    "just text",
    12,
    None,
)


def operations(bindings: tuple[BindingSpec, ...]) -> st.SearchStrategy[list]:
    """A transaction's program: mostly operations its bindings allow, in any order, with an
    emit or a conditional abort here and there, and rarely an abort, an exception or a
    violation."""
    choices: list[st.SearchStrategy[list]] = [
        st.just(["emit", "x"]),
        st.integers(0, len(RESULT_SHAPES) - 1).map(lambda i: ["emit_shape", i]),
        st.just(["abort_if_negative"]),
    ]
    for i, binding in enumerate(bindings):
        choices += [_fitting(f"b{i}", binding.access)] * 3
    rare: list[st.SearchStrategy[list]] = [st.just(["abort"]), st.just(["raise"])]
    rare += [_breaking(f"b{i}") for i in range(len(bindings))]
    one = st.integers(0, 24).flatmap(lambda i: st.one_of(*rare) if i == 0 else st.one_of(*choices))
    return st.lists(one, max_size=7)


@st.composite
def workloads(draw: st.DrawFn, max_events: int = 40, app: AppSpec | None = None) -> Workload:
    """A generated app (or `app`) with an initial state and a batch of events."""
    app = app or draw(app_specs())
    keys = draw(st.integers(1, 6))
    key = zipf_index(keys, draw(st.sampled_from([0.0, 0.99, 2.0])))
    state: dict[str, dict[Any, Any]] = {}
    for spec in app.tables:
        rows = draw(st.dictionaries(key, st.integers(-20, 200), max_size=keys))
        state[spec.name] = {
            (k if spec.key_type is int else f"r{k}"): _as(spec.value_type, v)
            for k, v in rows.items()
        }
    events: list[Event] = []
    for position in range(draw(st.integers(0, max_events))):
        events.append(draw(_event(app, key, position, events)))
    return Workload(app, state, events)


@st.composite
def _event(draw: st.DrawFn, app: AppSpec, key, position: int, earlier: list[Event]) -> Event:
    how = draw(st.sampled_from(["fresh"] * 16 + ["retry", "clash", "no_id", "unknown_stream"]))
    if how == "retry" and earlier:
        return draw(st.sampled_from(earlier))
    s = draw(st.integers(0, len(app.streams) - 1))
    bindings = app.streams[s]
    payload: dict[str, Any] = {
        "ops": draw(operations(bindings)),
        "types": {f"b{i}": app.tables[b.table].value_type.__name__ for i, b in enumerate(bindings)},
    }
    for field in KEY_FIELDS:
        if draw(st.integers(0, 40)) > 0:  # now and then a key field is missing
            payload[field] = draw(key)
    payload[FEE_FIELD] = 0
    stream = f"s{s}" if how != "unknown_stream" else "nowhere"
    if how == "clash" and earlier:
        return Event(stream, draw(st.sampled_from(earlier)).request_id, payload)
    if how == "no_id":
        return Event(stream, draw(st.sampled_from([None, "", 7])), payload)
    return Event(stream, f"q{position}", payload)


# -- a pinned sample, for the whole platform ------------------------------------------------
# `LEDGER_APP=tests/support/generated_apps.py:build_sample_ledger` runs a ledger the generator
# drew, under hostile names, through the pipeline, the audits and the DAGs: a file of a package
# (`tests/support`), so the platform imports it as `support.generated_apps` and ships that package
# to Spark's executors, as it would a user's. Every process that loads it (the tests, Airflow's
# tasks, Spark's executors) must build the same ledger, so the
# draw is pinned here as data: `app_specs()` under `@seed(7)`, the first app with three tables
# (one of each value type, both key types), every table written, and six bindings or more.
SAMPLE_APP = AppSpec(
    tables=(
        TableSpec("t0", str, int),
        TableSpec("t1", int, str),
        TableSpec("t2", str, dict),
    ),
    streams=(
        (
            BindingSpec(0, "fee", AccessType.ADD),
            BindingSpec(2, "k0", AccessType.READ),
            BindingSpec(2, "k2", AccessType.READ),
        ),
        (
            BindingSpec(0, "k3", AccessType.ADD),
            BindingSpec(1, "k0", AccessType.READ),
            BindingSpec(1, "k0", AccessType.READ_WRITE),
            BindingSpec(0, "k1", AccessType.READ),
        ),
        (
            BindingSpec(2, "k1", AccessType.WRITE),
            BindingSpec(0, "fee", AccessType.ADD),
        ),
    ),
)
SAMPLE_SEED = 20261125


def build_sample_ledger() -> StreamingLedger:
    """The pinned sample's ledger, under `HOSTILE_NAMES`."""
    return build_ledger(SAMPLE_APP, HOSTILE_NAMES)


@cache
def sample_events() -> list[Event]:
    """Events for `build_sample_ledger`, drawn by `workloads` for `SAMPLE_APP` (seeded, not
    shrunk: as rich as the generator makes them; its initial state left out, since a pipeline
    starts from an empty ledger). Drawn in the process that lands them: only the ledger must
    be the same everywhere."""
    drawn: list[Workload] = []

    @seed(SAMPLE_SEED)
    @settings(
        max_examples=10,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(workloads(max_events=80, app=SAMPLE_APP))
    def draw(workload: Workload) -> None:
        drawn.append(workload)

    draw()
    richest = max(drawn, key=lambda w: len(w.events))
    return HOSTILE_NAMES.events(richest.events)
