"""Running one event's transaction against the rows it binds.

`execute` is the single place where transaction semantics live (DESIGN.md, points 3 to 7):
key resolution, one buffer per (table, key), access enforcement, abort, and the rejection
reasons. Runners differ only in where rows come from and in which order events are fed in.

A parallel runner may *defer* rows that the whole batch only ever adds to: `execute` then
starts them at 0, records the transaction's deltas as a `PendingAdd`, and leaves the row's
before and after values (and the int64 range check of its running total) to
`ledger_engine.commutative`, which settles every pending add of a row in batch order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ledger_engine.api import AccessType, Stream, Table
from ledger_engine.model import (
    ABORTED,
    ACCESS_VIOLATION,
    BAD_KEY,
    FUNCTION_ERROR,
    TYPE_ERROR,
    Change,
    Event,
    Rejection,
    Result,
)
from ledger_engine.values import (
    Problem,
    error_text,
    int64_problem,
    is_int,
    json_copy,
    json_problem,
    key_problem,
)
from ledger_engine.values import value_problem as _value_problem

RowKey = tuple[str, Any]
ReadRow = Callable[[Table, Any], Any]


@dataclass(frozen=True, slots=True)
class PendingAdd:
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


@dataclass(frozen=True)
class Applied:
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
        problem = json_problem(payload, "emitted result")
        if problem is not None:
            self.fail(problem)
        self._results.append(json_copy(payload))

    def abort(self, detail: str = "") -> None:
        """Discard this transaction's writes and results; the event is rejected as `aborted`."""
        self.fail(Problem(ABORTED, str(detail)))

    def fail(self, problem: Problem) -> None:
        if self._failure is None:
            self._failure = problem
        raise _Stop


class _Row:
    """The one buffer of a (table, key) that all bindings of a transaction share.

    A deferred row starts at 0 and accumulates this transaction's deltas; `low` and `high`
    track their running total.
    """

    __slots__ = ("before", "deferred", "high", "key", "low", "table", "value", "written")

    def __init__(self, table: Table, key: Any, before: Any, *, deferred: bool = False) -> None:
        self.table = table
        self.key = key
        self.before = before
        self.value = before
        self.written = False
        self.deferred = deferred
        self.low = self.high = 0

    def change(self, request_id: str) -> Change | PendingAdd:
        if self.deferred:
            return PendingAdd(
                request_id, self.table.name, self.key, self.value, self.low, self.high
            )
        return Change(request_id, self.table.name, self.key, self.before, self.value)


def _private(value: Any) -> Any:
    """A copy the caller may mutate: ints and strs are immutable, dicts are copied."""
    kind = type(value)
    if kind is int or kind is str or value is None:
        return value
    return json_copy(value)


class StateAccess:
    """A binding's view of its row: `read`, `read_or`, `write`, `delete`, `add`.

    Each method checks the binding's access type; a violation rejects the transaction.
    """

    __slots__ = ("_access", "_ctx", "_name", "_row")

    def __init__(self, row: _Row, access: AccessType, ctx: Context, name: str) -> None:
        self._row = row
        self._access = access
        self._ctx = ctx
        self._name = name

    def read(self) -> Any:
        """The row's current value, or `None` if it does not exist."""
        self._require(self._access.reads, "read")
        return _private(self._row.value)

    def read_or(self, default: Any) -> Any:
        """The row's current value, or `default` if it does not exist."""
        value = self.read()
        return default if value is None else value

    def write(self, value: Any) -> None:
        """Set the row's value; `None` deletes the row."""
        self._require(self._access.writes, "write")
        self._store(value)

    def delete(self) -> None:
        """Remove the row."""
        self._require(self._access.writes, "delete")
        self._store(None)

    def add(self, delta: int) -> None:
        """Add an integer delta to the row (a missing row counts as 0) without reading it."""
        self._require(self._access in (AccessType.ADD, AccessType.READ_WRITE), "add")
        where = f"delta added through {self._name!r}"
        table = self._row.table
        if table.value_type is not int:
            kind = table.value_type.__name__
            self._ctx.fail(Problem(TYPE_ERROR, f"{where}: {table.name!r} holds {kind}, not int"))
        if not is_int(delta):
            kind = type(delta).__name__
            self._ctx.fail(Problem(TYPE_ERROR, f"{where} must be an int, got {kind}"))
        row = self._row
        current = 0 if row.value is None else row.value
        total = current + delta
        if row.deferred:
            # The row's real value is unknown here; its range is checked when it is settled.
            row.low = min(row.low, total)
            row.high = max(row.high, total)
        else:
            problem = int64_problem(total, f"{row.table.name}[{row.key!r}]")
            if problem is not None:
                self._ctx.fail(problem)
        row.value = total
        row.written = True

    def _store(self, value: Any) -> None:
        table = self._row.table
        problem = _value_problem(value, table.value_type, f"value written through {self._name!r}")
        if problem is not None:
            self._ctx.fail(problem)
        self._row.value = _private(value)
        self._row.written = True

    def _require(self, allowed: bool, operation: str) -> None:
        if not allowed:
            self._ctx.fail(
                Problem(
                    ACCESS_VIOLATION,
                    f"{operation} through {self._name!r}, bound as {self._access.name}",
                )
            )


def resolve_keys(stream: Stream, payload: Any) -> list[Any] | Problem:
    """The key of every binding of `stream` for `payload`, or the problem that rejects it."""
    keys: list[Any] = []
    for binding in stream.bindings:
        where = f"key of {binding.name!r}"
        try:
            key = binding.key_fn(payload)
        except Exception as exc:
            return Problem(BAD_KEY, f"{where}: {error_text(exc)}")
        if key is None:
            return Problem(BAD_KEY, f"{where} is None")
        problem = key_problem(key, binding.table.key_type, where)
        if problem is not None:
            return problem
        keys.append(key)
    return keys


def execute(
    stream: Stream,
    event: Event,
    keys: list[Any],
    read_row: ReadRow,
    deferred: int = 0,
) -> Applied | Rejection:
    """Run `event`'s transaction; `keys` come from `resolve_keys`, rows from `read_row`.

    Bit `i` of `deferred` marks binding `i`'s row as deferred: it is not read, because the
    batch only adds to it (see the module docstring). Nothing is written anywhere: the caller
    applies the returned changes to its state.
    """
    assert len(keys) == len(stream.bindings), "one key per binding"
    rows: dict[RowKey, _Row] = {}
    ctx = Context()
    accesses: dict[str, StateAccess] = {}
    for i, (binding, key) in enumerate(zip(stream.bindings, keys, strict=True)):
        table = binding.table
        row_key = (table.name, key)
        row = rows.get(row_key)
        is_deferred = bool(deferred >> i & 1)
        if row is None:
            if is_deferred:
                assert binding.access is AccessType.ADD, "only added-to rows are deferred"
                row = _Row(table, key, 0, deferred=True)
            else:
                row = _Row(table, key, read_row(table, key))
            rows[row_key] = row
        assert row.deferred == is_deferred, "the bindings of one row agree on its deferral"
        accesses[binding.name] = StateAccess(row, binding.access, ctx, binding.name)

    payload = json_copy(event.payload)
    try:
        stream.fn(payload, ctx, **accesses)
    except _Stop:
        pass
    except Exception as exc:
        if ctx._failure is None:
            ctx._failure = Problem(FUNCTION_ERROR, error_text(exc))
    failure = ctx._failure
    if failure is not None:
        reason = failure.reason
        if reason == FUNCTION_ERROR:
            # The contract spells the reason as `function_error: <ExceptionType>: <message>`.
            reason = f"{FUNCTION_ERROR}: {failure.detail}"
        return Rejection(event.stream, event.request_id, reason, failure.detail)

    changes = tuple(row.change(event.request_id) for row in rows.values() if row.written)
    results = tuple(Result(event.stream, event.request_id, p) for p in ctx._results)
    return Applied(changes, results)
