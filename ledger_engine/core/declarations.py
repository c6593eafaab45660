"""The declaration API: tables, streams, bindings and access types.

Modelled on Apache Flink's Streaming Ledger::

    ledger = StreamingLedger.create("bank")
    accounts = ledger.declare_state("accounts")
    ledger.using_stream("deposits").apply(deposit).on(
        accounts, lambda e: e["account_id"], "account", AccessType.ADD)

A key read from one payload field is best bound with `operator.itemgetter("account_id")`: an
event whose field is null is then rejected naming that field, where a function's reason can
only name the binding and show the payload.

A stream may also declare its payload's fields, so that an event with a field missing or one
nobody declared (a typo such as `ammount`) is rejected as `invalid_event` before it runs::

    ledger.using_stream("deposits").apply(deposit).payload_fields(
        required={"account_id", "amount"}, optional={"memo"})

Declaration errors are raised as `DeclarationError` as soon as they can be seen: a wrong bind
name, an unknown table or a non-callable key function at `.on(...)`; a parameter of the function
that no binding fills when the stream's declaration is complete (the next declaration, or the
first run, whichever comes first).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ledger_engine.core.binding_keys import payload_field as field_read_by
from ledger_engine.core.invariants import Invariant
from ledger_engine.core.money import Unit, parse_unit
from ledger_engine.core.naming import label_problem, sql_identifier
from ledger_engine.core.storable import storable_text
from ledger_engine.errors import DeclarationError

TransactionFn = Callable[..., None]
KeyFn = Callable[[Any], Any]
# `sample(count, *, rows, seed)`: seeded example events for `ledger demo` and `ledger generate`.
SampleEventsFn = Callable[..., Iterable[Any]]

_VALUE_TYPES = (int, str, dict)
_KEY_TYPES = (str, int)


class AccessType(Enum):
    """How a transaction may touch a bound row (docs/contract.md, point 5)."""

    READ = "read"
    WRITE = "write"
    READ_WRITE = "read_write"
    ADD = "add"

    @property
    def reads(self) -> bool:
        return self in (AccessType.READ, AccessType.READ_WRITE)

    @property
    def writes(self) -> bool:
        return self in (AccessType.WRITE, AccessType.READ_WRITE)


@dataclass(frozen=True)
class Table:
    """A declared table: keys of `key_type` mapping to values of `value_type`.

    `name` is the label the application chose; `sql_name` the identifier of the PostgreSQL
    table that stores its rows (`ledger_engine.core.naming`). `unit`, for a table of integers
    only, is what its amounts count (`ledger_engine.core.money`); `None`: plain integers.
    """

    ledger: str
    name: str
    key_type: type
    value_type: type
    unit: Unit | None = None
    sql_name: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sql_name", sql_identifier(self.name))


@dataclass(frozen=True)
class View:
    """A declared view for people and reports: `query` is a `SELECT` over the ledger's tables
    (by their `sql_name`) and the platform's views and logs. Readers may query it."""

    ledger: str
    name: str
    query: str
    sql_name: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sql_name", sql_identifier(self.name))


@dataclass(frozen=True)
class Binding:
    """One row a stream's transaction touches: `key_fn(event)` names the key in `table`.

    `reads`, `writes` and `adds` say what `access` allows, and `int_valued` whether the table
    holds integers, worked out once here rather than on every access of every transaction;
    `payload_field` the payload field the key is read from, if the key function is
    `itemgetter(field)`, which a reason names (`core.binding_keys`).
    """

    table: Table
    key_fn: KeyFn
    name: str
    access: AccessType
    stream: str = ""  # the stream's name, for a reason to name the binding by
    payload_field: str | None = field(init=False)
    reads: bool = field(init=False)
    writes: bool = field(init=False)
    adds: bool = field(init=False)
    int_valued: bool = field(init=False)  # the table holds int64s
    str_keyed: bool = field(init=False)  # the table's keys are text

    def __post_init__(self) -> None:
        access = self.access
        object.__setattr__(self, "int_valued", self.table.value_type is int)
        object.__setattr__(self, "str_keyed", self.table.key_type is str)
        object.__setattr__(self, "payload_field", field_read_by(self.key_fn))
        object.__setattr__(self, "reads", access.reads)
        object.__setattr__(self, "writes", access.writes)
        object.__setattr__(self, "adds", access in (AccessType.ADD, AccessType.READ_WRITE))


@dataclass(frozen=True)
class PayloadFields:
    """The fields a stream's payload has: all of `required`, any of `optional`, no other."""

    required: frozenset[str]
    optional: frozenset[str] = frozenset()
    # Every field the payload may have, worked out once: `problem` runs on every event.
    allowed: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "allowed", self.required | self.optional)

    def problem(self, payload: Mapping[str, Any], what: str = "payload") -> str | None:
        """What is wrong with the fields of `payload` (`None` if nothing is), said of `what`."""
        keys = payload.keys()
        if keys >= self.required and keys <= self.allowed:
            return None
        missing = sorted(self.required - keys)
        unknown = sorted(keys - self.allowed)
        parts = []
        if missing:
            parts.append(f"lacks {_field_list(missing)}")
        if unknown:
            parts.append(f"has unknown {_field_list(unknown)}")
        accepted = ", ".join(sorted(self.allowed)) or "none"
        return f"{what} {' and '.join(parts)} (fields it takes: {accepted})"


def _field_list(names: list[str], shown: int = 5) -> str:
    """`field 'a'` or `fields 'a', 'b'`, at most `shown` names, each cut short."""
    quoted = [repr(n) if len(n) <= 40 else repr(n[:37]) + "..." for n in names[:shown]]
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return f"field{'s' if len(names) > 1 else ''} {', '.join(quoted)}{more}"


@dataclass(frozen=True)
class Stream:
    """A declared stream: its transaction function and the rows it binds, in declaration order.

    `fields` is `None` when the stream does not declare its payload's fields (any are taken).
    """

    name: str
    fn: TransactionFn
    bindings: tuple[Binding, ...]
    fields: PayloadFields | None = None
    # For binding i, the earlier bindings of the same table: the only ones whose row it can
    # share (docs/contract.md, point 3), so that a transaction compares keys with those alone.
    same_table_before: tuple[tuple[int, ...], ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        tables = [b.table for b in self.bindings]
        earlier = tuple(
            tuple(j for j in range(i) if tables[j] == table) for i, table in enumerate(tables)
        )
        object.__setattr__(self, "same_table_before", earlier)


def _table_unit(name: str, value_type: type, unit: object) -> Unit | None:
    """The declared `unit` of table `name`, parsed; a unit on a table of anything but
    integers, or one badly written, is a `DeclarationError`."""
    if unit is None:
        return None
    if value_type is not int:
        raise DeclarationError(
            f"table {name!r}: only a table of int may declare a unit, and its values are "
            f"{value_type.__name__}"
        )
    try:
        return parse_unit(unit)  # type: ignore[arg-type]
    except ValueError as wrong:
        raise DeclarationError(f"table {name!r}: {wrong}") from None


def _check_name(kind: str, name: object) -> str:
    """`name` if it can label a `kind`: any non-empty text PostgreSQL can store."""
    problem = label_problem(kind, name)
    if problem is not None:
        raise DeclarationError(problem)
    assert isinstance(name, str)
    return name


class StreamingLedger:
    """A set of tables and the streams whose transactions read and write them."""

    def __init__(self, name: str) -> None:
        self.name = _check_name("ledger", name)
        self._tables: dict[str, Table] = {}
        self._views: dict[str, View] = {}
        self._invariants: dict[str, Invariant] = {}
        self._streams: dict[str, _StreamDeclaration] = {}
        self._sample_events: SampleEventsFn | None = None

    @classmethod
    def create(cls, name: str) -> StreamingLedger:
        return cls(name)

    # -- declarations -----------------------------------------------------------------------

    def declare_state(
        self,
        name: str,
        key_type: type = str,
        value_type: type = int,
        unit: str | Unit | None = None,
    ) -> Table:
        """Declare a table; `value_type` is `int` (int64), `str` or `dict` (a JSON object).

        A table of `int` may declare the `unit` its integers count, as `CODE/PRECISION`
        (`"EUR/2"`: euro cents) or a `Unit`: its amounts then read as money wherever a person
        reads them (`ledger_engine.core.money`); they are stored and added as integers still.
        """
        self._complete_pending()
        _check_name("table", name)
        if name in self._tables:
            raise DeclarationError(f"table {name!r} is declared twice")
        if key_type not in _KEY_TYPES:
            raise DeclarationError(f"table {name!r}: key_type must be str or int, not {key_type!r}")
        if value_type not in _VALUE_TYPES:
            raise DeclarationError(
                f"table {name!r}: value_type must be int, str or dict, not {value_type!r}"
            )
        table = Table(self.name, name, key_type, value_type, _table_unit(name, value_type, unit))
        for other in self._tables.values():
            if other.sql_name == table.sql_name:
                raise DeclarationError(
                    f"tables {other.name!r} and {name!r} would share the SQL table "
                    f"{table.sql_name!r}; rename one of them"
                )
        self._tables[name] = table
        return table

    def declare_view(self, name: str, query: str) -> View:
        """Declare a view named `name` showing `query` (a `SELECT`); see `View`."""
        _check_name("view", name)
        if name in self._views:
            raise DeclarationError(f"view {name!r} is declared twice")
        if not isinstance(query, str) or not query.strip() or not storable_text(query):
            raise DeclarationError(f"view {name!r}: the query must be non-empty SQL text")
        view = View(self.name, name, query.strip().rstrip(";"))
        taken = {t.sql_name for t in self._tables.values()} | {
            v.sql_name for v in self._views.values()
        }
        if view.sql_name in taken:
            raise DeclarationError(f"view {name!r} would share the SQL name {view.sql_name!r}")
        self._views[name] = view
        return view

    def declare_invariant(self, invariant: Invariant) -> Invariant:
        """Declare a rule the application's data keeps (`ledger_engine.core.invariants`): the
        audits check it. Its table must be declared and hold integers; its streams must be
        declared by the time the ledger is complete."""
        if not isinstance(invariant, Invariant):
            raise DeclarationError(f"not an invariant: {invariant!r}")
        table = self._tables.get(invariant.table)
        if table is None:
            raise DeclarationError(
                f"invariant {invariant.name!r}: unknown table {invariant.table!r}"
            )
        if table.value_type is not int:
            raise DeclarationError(
                f"invariant {invariant.name!r}: table {table.name!r} does not hold integers"
            )
        taken = {i.sql_name for i in self._invariants.values()}
        if invariant.name in self._invariants or invariant.sql_name in taken:
            raise DeclarationError(f"invariant {invariant.name!r} is declared twice")
        self._invariants[invariant.name] = invariant
        return invariant

    def declare_sample_events(self, sample: SampleEventsFn) -> SampleEventsFn:
        """Declare how to make example events of this ledger, for `ledger demo` and `ledger
        generate`: `sample(count, *, rows, seed)` returns `count` events (`Event`s) spread over
        about `rows` rows of its tables, the same ones for the same arguments. An application
        ships its sample beside its tables, as the seed's example ships its generators."""
        if not callable(sample):
            raise DeclarationError(f"sample events: {sample!r} is not callable")
        try:
            inspect.signature(sample).bind(0, rows=1, seed=0)
        except TypeError as wrong:
            raise DeclarationError(
                f"sample events: {_fn_name(sample)} must accept (count, *, rows, seed): {wrong}"
            ) from None
        except ValueError:  # a callable whose signature Python cannot inspect: trust it
            pass
        if self._sample_events is not None:
            raise DeclarationError("sample events are declared twice")
        self._sample_events = sample
        return sample

    def using_stream(self, stream_name: str) -> _StreamStart:
        """Start declaring the transaction that events of `stream_name` run."""
        self._complete_pending()
        _check_name("stream", stream_name)
        if stream_name in self._streams:
            raise DeclarationError(f"stream {stream_name!r} is declared twice")
        return _StreamStart(self, stream_name)

    # -- queries ----------------------------------------------------------------------------

    @property
    def tables(self) -> dict[str, Table]:
        return dict(self._tables)

    @property
    def views(self) -> dict[str, View]:
        return dict(self._views)

    @property
    def invariants(self) -> dict[str, Invariant]:
        return dict(self._invariants)

    @property
    def sample_events(self) -> SampleEventsFn | None:
        """The declared maker of example events (`declare_sample_events`), if any."""
        return self._sample_events

    @property
    def streams(self) -> dict[str, Stream]:
        """The complete stream declarations; raises `DeclarationError` if one is incomplete."""
        self._complete_pending()
        return {name: decl.stream() for name, decl in self._streams.items()}

    def check(self) -> None:
        """Raise `DeclarationError` unless every declaration is complete and consistent."""
        self._complete_pending()
        if not self._streams:
            raise DeclarationError(f"ledger {self.name!r} declares no stream")
        for invariant in self._invariants.values():
            self._check_sources(invariant)

    def _check_sources(self, invariant: Invariant) -> None:
        for stream_name, payload_field in invariant.sources:
            decl = self._streams.get(stream_name)
            if decl is None:
                raise DeclarationError(
                    f"invariant {invariant.name!r}: unknown stream {stream_name!r}"
                )
            fields = decl.stream().fields
            if (
                payload_field is not None
                and fields is not None
                and (payload_field not in fields.allowed)
            ):
                raise DeclarationError(
                    f"invariant {invariant.name!r}: stream {stream_name!r} has no payload "
                    f"field {payload_field!r}"
                )

    def _complete_pending(self) -> None:
        for decl in self._streams.values():
            decl.check_complete()

    def _register(self, decl: _StreamDeclaration) -> None:
        if decl.name in self._streams:
            raise DeclarationError(f"stream {decl.name!r} is declared twice")
        self._streams[decl.name] = decl

    def _resolve_table(self, table: Table | str) -> Table:
        name = table.name if isinstance(table, Table) else table
        found = self._tables.get(name) if isinstance(name, str) else None
        if found is None or (isinstance(table, Table) and table != found):
            raise DeclarationError(f"unknown table {table!r} in ledger {self.name!r}")
        return found


class _StreamStart:
    def __init__(self, ledger: StreamingLedger, name: str) -> None:
        self._ledger = ledger
        self._name = name

    def apply(self, fn: TransactionFn) -> _StreamDeclaration:
        if not callable(fn):
            raise DeclarationError(f"stream {self._name!r}: transaction function is not callable")
        decl = _StreamDeclaration(self._ledger, self._name, fn)
        self._ledger._register(decl)
        return decl


class _StreamDeclaration:
    """A stream being declared; `.on(...)` adds one binding and returns the declaration."""

    def __init__(self, ledger: StreamingLedger, name: str, fn: TransactionFn) -> None:
        self._ledger = ledger
        self.name = name
        self._fn = fn
        self._bindings: list[Binding] = []
        self._params = _keyword_parameters(name, fn)
        self._fields: PayloadFields | None = None

    def payload_fields(
        self, required: Iterable[str], optional: Iterable[str] = ()
    ) -> _StreamDeclaration:
        """Declare the payload's fields: every event must carry each `required` field and may
        carry `optional` ones; an event with a missing or any other field is rejected as
        `invalid_event`, its detail naming the fields."""
        where = f"stream {self.name!r}"
        if self._fields is not None:
            raise DeclarationError(f"{where}: payload fields are declared twice")
        needed = _field_names(where, "required", required)
        extra = _field_names(where, "optional", optional)
        both = sorted(needed & extra)
        if both:
            raise DeclarationError(f"{where}: field(s) {both} are both required and optional")
        self._fields = PayloadFields(needed, extra)
        return self

    def on(
        self, table: Table | str, key_fn: KeyFn, bind_name: str, access: AccessType
    ) -> _StreamDeclaration:
        """Bind the row of `table` whose key `key_fn(payload)` gives to the transaction
        function's parameter `bind_name`, with `access`. A key read by `itemgetter(field)` is
        named by its field when an event's is unusable (`field 'account_id' is null: ...`)."""
        where = f"stream {self.name!r}, binding {bind_name!r}"
        resolved = self._ledger._resolve_table(table)
        if not callable(key_fn):
            raise DeclarationError(f"{where}: key function {key_fn!r} is not callable")
        if not isinstance(bind_name, str) or not bind_name.isidentifier():
            raise DeclarationError(f"{where}: bind name must be a Python identifier")
        if bind_name in ("event", "ctx"):
            raise DeclarationError(f"{where}: bind name may not be 'event' or 'ctx'")
        if any(b.name == bind_name for b in self._bindings):
            raise DeclarationError(f"{where}: bind name is used twice")
        if not isinstance(access, AccessType):
            raise DeclarationError(f"{where}: access must be an AccessType, not {access!r}")
        if access is AccessType.ADD and resolved.value_type is not int:
            raise DeclarationError(
                f"{where}: ADD needs an int table, {resolved.name!r} holds {resolved.value_type}"
            )
        if not self._params.accepts(bind_name):
            raise DeclarationError(
                f"{where}: the transaction function {_fn_name(self._fn)} has no parameter "
                f"{bind_name!r}"
            )
        self._bindings.append(Binding(resolved, key_fn, bind_name, access, self.name))
        return self

    def check_complete(self) -> None:
        bound = {b.name for b in self._bindings}
        missing = sorted(self._params.required - bound)
        if missing:
            raise DeclarationError(
                f"stream {self.name!r}: parameter(s) {', '.join(missing)} of "
                f"{_fn_name(self._fn)} have no binding"
            )

    def stream(self) -> Stream:
        return Stream(self.name, self._fn, tuple(self._bindings), self._fields)


def _field_names(where: str, kind: str, names: Iterable[str]) -> frozenset[str]:
    if isinstance(names, str | bytes):  # iterating would give its characters
        raise DeclarationError(f"{where}: {kind} fields must be a collection of names, not a str")
    try:
        found = frozenset(names)
    except TypeError as exc:
        raise DeclarationError(f"{where}: {kind} fields must be names: {exc}") from exc
    for name in found:
        if not isinstance(name, str) or not name or not storable_text(name):
            raise DeclarationError(f"{where}: {kind} field {name!r} is not a non-empty string")
    return found


def _fn_name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", repr(fn))


@dataclass(frozen=True)
class _Params:
    """The row parameters of `fn(event, ctx, **rows)`."""

    required: frozenset[str]
    optional: frozenset[str]
    takes_any: bool

    def accepts(self, name: str) -> bool:
        return self.takes_any or name in self.required or name in self.optional


def _keyword_parameters(stream: str, fn: TransactionFn) -> _Params:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise DeclarationError(f"stream {stream!r}: cannot inspect {fn!r}: {exc}") from exc
    params = list(signature.parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) < 2 and not any(p.kind is p.VAR_POSITIONAL for p in params):
        raise DeclarationError(f"stream {stream!r}: {_fn_name(fn)} must take (event, ctx, **rows)")
    rows = positional[2:] + [p for p in params if p.kind is p.KEYWORD_ONLY]
    return _Params(
        required=frozenset(p.name for p in rows if p.default is p.empty),
        optional=frozenset(p.name for p in rows if p.default is not p.empty),
        takes_any=any(p.kind is p.VAR_KEYWORD for p in params),
    )
