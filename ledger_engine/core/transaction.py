"""Running one event's transaction against the rows it binds.

`execute` is the single place where transaction semantics live (docs/contract.md, points 3 to 7):
key resolution, one buffer per (table, key), access enforcement, abort, and the rejection
reasons. Runners differ only in where rows come from and in which order events are fed in.

A parallel runner may *defer* rows that the whole batch only ever adds to: `execute` then
starts them at 0, records the transaction's deltas as a `PendingAdd`, and leaves the row's
before and after values (and the int64 range check of its running total) to
`ledger_engine.runtime.parallel.settle`, which settles every pending add of a row in batch order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from ledger_engine.core.binding_keys import key_failed, key_subject, no_key
from ledger_engine.core.declarations import AccessType, Binding, Stream
from ledger_engine.core.records import (
    ABORTED,
    ACCESS_VIOLATION,
    BAD_KEY,
    FUNCTION_ERROR,
    INT64_MAX,
    INT64_MIN,
    TYPE_ERROR,
    Change,
    Event,
    Rejection,
    Result,
    record,
)
from ledger_engine.core.storable import (
    MAX_ID_BYTES,
    Problem,
    error_text,
    int64_problem,
    is_int,
    json_copy,
    json_problem,
    key_problem,
    plain_flat_copy,
    plain_json,
)
from ledger_engine.core.storable import value_problem as _value_problem
from ledger_engine.errors import MissingRow

RowKey = tuple[str, Any]  # a row: (its table, its key)
# Where `execute` reads rows: table name -> key -> value (read in C: a call per row costs).
Rows = Mapping[str, Mapping[Any, Any]]
_LACKING = object()  # the value of a key that `Rows` does not hold


class PendingAdd(NamedTuple):
    """The deltas a transaction added to a deferred row, in place of a `Change`.

    `delta` is their sum; `low` and `high` are the lowest and highest running total of the
    deltas (starting at 0), so that the settling step can check every intermediate value the
    serial runner would have range-checked.
    """

    request_id: str
    table: str
    key: Any
    delta: int
    low: int
    high: int


class Applied(NamedTuple):
    """A transaction that committed: its row writes (in binding order) and its results.

    `changes` holds a `PendingAdd` for each deferred row, in the place its `Change` takes once
    the row is settled.
    """

    changes: tuple[Change | PendingAdd, ...]
    results: tuple[Result, ...]


class _Stop(BaseException):
    """Unwinds a transaction function after abort or a violation.

    A BaseException, so that a function's own `except Exception` does not swallow it; even if a
    function catches it, the failure recorded on the context still rejects the transaction.
    """


class Context:
    """The transaction's handle for emitting results and aborting."""

    __slots__ = ("_failure", "_results")

    def __init__(self) -> None:
        self._results: list[Any] = []
        self._failure: Problem | None = None

    def emit(self, payload: Any) -> None:
        """Emit a result event (any JSON value); discarded if the transaction does not commit."""
        copy = plain_flat_copy(payload) if type(payload) is dict else None
        if copy is None:
            if not plain_json(payload):
                problem = json_problem(payload, "emitted result")
                if problem is not None:
                    self.fail(problem)
            copy = json_copy(payload)
        self._results.append(copy)

    def abort(self, detail: str = "") -> None:
        """Discard this transaction's writes and results; the event is rejected as `aborted`."""
        self.fail(Problem(ABORTED, str(detail)))

    def fail(self, problem: Problem) -> None:
        if self._failure is None:
            self._failure = problem
        raise _Stop


def _private(value: Any) -> Any:
    """A copy the caller may mutate: ints and strs are immutable, dicts are copied."""
    kind = type(value)
    if kind is int or kind is str or value is None:
        return value
    return json_copy(value)


class StateAccess:
    """A binding's view of its row: `read`, `read_or`, `write`, `delete`, `add`.

    Each method checks the binding's access type; a violation rejects the transaction. The
    common case of a ledger (an int64 read from or written to an int table) takes the short
    path of each method; everything else goes through the checks of `ledger_engine.core.storable`.

    The first binding of a row also holds the row's one buffer (`_value`, the value `_before`
    the transaction, whether it was `_written`; for a deferred row, which starts at 0 and
    accumulates this transaction's deltas, their running total's `_low` and `_high`); a later
    binding of the same row points `_row` at the first, so that all of them share the buffer
    (docs/contract.md, point 3) with no object per row beside the accesses.
    """

    __slots__ = (
        "_before",
        "_binding",
        "_ctx",
        "_deferred",
        "_high",
        "_key",
        "_low",
        "_row",
        "_value",
        "_written",
    )

    def __init__(self, binding: Binding, ctx: Context, key: Any) -> None:
        self._binding = binding
        self._ctx = ctx
        self._key = key
        self._row = self
        self._written = False
        self._deferred = False

    def read(self) -> Any:
        """The row's current value, or `None` if it does not exist."""
        if not self._binding.reads:
            self._violation("read")
        value = self._row._value
        kind = type(value)
        if kind is int or kind is str or value is None:
            return value
        return json_copy(value)

    def read_or(self, default: Any) -> Any:
        """The row's current value, or `default` if it does not exist."""
        # `read`'s body again: a ledger's functions call this most, and a call costs.
        if not self._binding.reads:
            self._violation("read")
        value = self._row._value
        kind = type(value)
        if kind is int or kind is str:
            return value
        return default if value is None else json_copy(value)

    def write(self, value: Any) -> None:
        """Set the row's value; `None` deletes the row."""
        binding = self._binding
        if not binding.writes:
            self._violation("write")
        if type(value) is int and binding.int_valued and INT64_MIN <= value <= INT64_MAX:
            row = self._row
            row._value = value
            row._written = True
        else:
            self._store(value)

    def delete(self) -> None:
        """Remove the row."""
        if not self._binding.writes:
            self._violation("delete")
        self._store(None)

    def add(self, delta: int) -> None:
        """Add an integer delta to the row (a missing row counts as 0) without reading it."""
        binding = self._binding
        if not binding.adds:
            self._violation("add")
        if not (binding.int_valued and type(delta) is int):
            self._add_problem(delta)
        row = self._row
        current = row._value
        total = delta if current is None else current + delta
        if row._deferred:
            # The row's real value is unknown here; its range is checked when it is settled.
            if total < row._low:
                row._low = total
            elif total > row._high:
                row._high = total
        elif not INT64_MIN <= total <= INT64_MAX:
            problem = int64_problem(total, f"{binding.table.name}[{row._key!r}]")
            assert problem is not None
            self._ctx.fail(problem)
        row._value = total
        row._written = True

    def _add_problem(self, delta: Any) -> None:
        """Fail the transaction if `delta` may not be added to the row (an int subclass that
        is not a bool passes: `is_int` says what counts as an integer)."""
        where = f"delta added through {self._binding.name!r}"
        table = self._binding.table
        if table.value_type is not int:
            kind = table.value_type.__name__
            self._ctx.fail(Problem(TYPE_ERROR, f"{where}: {table.name!r} holds {kind}, not int"))
        if not is_int(delta):
            kind = type(delta).__name__
            self._ctx.fail(Problem(TYPE_ERROR, f"{where} must be an int, got {kind}"))

    def _store(self, value: Any) -> None:
        table = self._binding.table
        where = f"value written through {self._binding.name!r}"
        problem = _value_problem(value, table.value_type, where)
        if problem is not None:
            self._ctx.fail(problem)
        row = self._row
        row._value = _private(value)
        row._written = True

    def _violation(self, operation: str) -> None:
        binding = self._binding
        self._ctx.fail(
            Problem(
                ACCESS_VIOLATION,
                f"{operation} through {binding.name!r}, bound as {binding.access.name}",
            )
        )

    def _probe(self, request_id: str) -> PendingAdd:
        """The range of a deferred row's running total in a transaction that then failed."""
        assert self._row is self and self._deferred
        return PendingAdd(request_id, self._binding.table.name, self._key, 0, self._low, self._high)

    def _change(self, request_id: str) -> Change | PendingAdd:
        """What the transaction did to the row this access holds the buffer of."""
        assert self._row is self and self._written
        table = self._binding.table.name
        if self._deferred:
            return PendingAdd(request_id, table, self._key, self._value, self._low, self._high)
        return Change(request_id, table, self._key, self._before, self._value)


def resolve_keys(stream: Stream, payload: Any) -> list[Any] | Problem:
    """The key of every binding of `stream` for `payload`, or the problem that rejects it."""
    keys: list[Any] = []
    for binding in stream.bindings:
        try:
            key = binding.key_fn(payload)
        except Exception as exc:
            return Problem(BAD_KEY, key_failed(binding, exc, payload))
        # The common key (ASCII text or an int64 of the table's key type) is decided here;
        # anything else goes through `key_problem`, which says what is wrong, if anything.
        kind = type(key)
        if kind is str:
            plain = (
                binding.str_keyed
                and key.isascii()
                and "\x00" not in key
                and len(key) <= MAX_ID_BYTES
            )
        else:
            plain = kind is int and not binding.str_keyed and INT64_MIN <= key <= INT64_MAX
        if not plain:
            if key is None:
                return Problem(BAD_KEY, no_key(binding, payload))
            problem = key_problem(key, binding.table.key_type, key_subject(binding))
            if problem is not None:
                return problem
        keys.append(key)
    return keys


def execute(
    stream: Stream,
    event: Event,
    keys: list[Any] | tuple[Any, ...],
    rows: Rows,
    *,
    delivered: bool = False,
    deferred: int = 0,
    probes: list[PendingAdd] | None = None,
) -> Applied | Rejection:
    """Run `event`'s transaction; `keys` come from `resolve_keys`, rows from `rows`.

    `rows` holds either every row there is (a state: a key it lacks is an absent row) or, when
    `delivered`, the rows delivered to a bin (absent ones as `None`: a key it lacks is a broken
    schedule, raised as `MissingRow`).

    Bit `i` of `deferred` marks binding `i`'s row as deferred: it is not read, because the
    batch only adds to it (see the module docstring). Nothing is written anywhere: the caller
    applies the returned changes to its state.

    A transaction that adds to a deferred row and then fails (an abort, say) is rejected for
    that reason here; but had the serial runner known the row's value, one of those adds might
    have overflowed first, rejecting it as `overflow`. So for each deferred row it added to, a
    *probe* (a `PendingAdd` with delta 0 and the running total's range) is appended to
    `probes`, which a deferring runner must pass and settle (`runtime.parallel.settle.settle_row`).
    """
    ctx = Context()
    accesses: list[StateAccess] = []
    arguments: dict[str, StateAccess] = {}  # bind name -> access: the function's keywords
    pending = deferred  # its lowest bit is the current binding's
    for binding, key, earlier in zip(stream.bindings, keys, stream.same_table_before, strict=True):
        access = row = StateAccess(binding, ctx, key)
        for j in earlier:
            if keys[j] == key:  # a row bound before: share its buffer
                row = access._row = accesses[j]._row
                break
        if row is access:
            if pending & 1:
                assert binding.access is AccessType.ADD, "only added-to rows are deferred"
                access._deferred = True
                access._value = access._before = access._low = access._high = 0
            else:
                value = rows[binding.table.name].get(key, _LACKING)
                if value is _LACKING:
                    if delivered:
                        table = binding.table.name
                        raise MissingRow(f"row {table}[{key!r}] was not delivered to its bin")
                    value = None
                access._value = access._before = value
        else:
            assert row._deferred == bool(pending & 1), "the bindings of one row agree on it"
        pending >>= 1
        accesses.append(access)
        arguments[binding.name] = access

    payload = json_copy(event.payload)
    try:
        stream.fn(payload, ctx, **arguments)
    except _Stop:
        pass
    except Exception as exc:
        if ctx._failure is None:
            ctx._failure = Problem(FUNCTION_ERROR, error_text(exc))
    failure = ctx._failure
    rid = event.request_id
    if failure is not None:
        if deferred:
            assert probes is not None, "a runner that defers rows settles the probes"
            probes.extend(a._probe(rid) for a in accesses if a._deferred and a._written)
        reason = failure.reason
        if reason == FUNCTION_ERROR:
            # The contract spells the reason as `function_error: <ExceptionType>: <message>`.
            reason = f"{FUNCTION_ERROR}: {failure.detail}"
        return Rejection(event.stream, rid, reason, failure.detail)

    if deferred:
        changes = tuple([a._change(rid) for a in accesses if a._written])
    else:  # `_change` inline: no row is deferred
        changes = tuple(
            [
                record(Change, (rid, a._binding.table.name, a._key, a._before, a._value))
                for a in accesses
                if a._written
            ]
        )
    stream_name = event.stream
    results = tuple([record(Result, (stream_name, rid, p)) for p in ctx._results])
    return record(Applied, (changes, results))
