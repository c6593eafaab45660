"""The engine contract (docs/contract.md, points 1 to 10), one point at a time, against the
serial reference runner."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from ledger_engine import (
    AccessType,
    Change,
    Duplicate,
    Event,
    Rejection,
    Result,
    RunResult,
    StreamingLedger,
    run_serial,
)
from ledger_engine.apps.bank.generator import generate_events
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.core.records import INT64_MAX, INT64_MIN
from tests.support.other_process import OtherHashSeed

# -- helpers ---------------------------------------------------------------------------------


def by_k(event: dict) -> Any:
    return event["k"]


def one_row_ledger(
    fn: Callable[..., None],
    access: AccessType = AccessType.READ_WRITE,
    *,
    value_type: type = int,
    key_type: type = str,
    key_fn: Callable[[dict], Any] = by_k,
) -> StreamingLedger:
    """Table `t`, stream `s` whose function gets the row `t[key_fn(event)]` as `row`."""
    ledger = StreamingLedger.create("contract")
    table = ledger.declare_state("t", key_type=key_type, value_type=value_type)
    ledger.using_stream("s").apply(fn).on(table, key_fn, "row", access)
    return ledger


def ev(request_id: Any, **payload: Any) -> Event:
    return Event("s", request_id, payload)


def assert_no_effect(result: RunResult, state_before: dict) -> None:
    assert result.state == state_before
    assert result.results == []
    assert result.changes == []
    assert result.applied_count == 0


def only_rejection(result: RunResult) -> Rejection:
    assert len(result.rejections) == 1, result.rejections
    return result.rejections[0]


def set_value(event, ctx, row):
    row.write(event["value"])
    ctx.emit({"set": event["value"]})


def double(event, ctx, row):
    row.write(row.read_or(0) * 2)
    ctx.emit({"doubled": row.read()})


def counter_ledger() -> StreamingLedger:
    """Two streams on one int table whose operations do not commute: `set` and `double`."""
    ledger = StreamingLedger.create("counter")
    table = ledger.declare_state("t")
    ledger.using_stream("set").apply(set_value).on(table, by_k, "row", AccessType.WRITE)
    ledger.using_stream("double").apply(double).on(table, by_k, "row", AccessType.READ_WRITE)
    return ledger


def run_one_at_a_time(
    ledger: StreamingLedger, events: Sequence[Event], state: dict | None = None
) -> RunResult:
    """Run each event on its own, carrying state and seen request ids from run to run."""
    combined = RunResult(state=copy.deepcopy(state or {}))
    known: dict[str, str] = {}
    for event in events:
        single = run_serial(ledger, [event], combined.state, known)
        combined.state = single.state
        combined.results += single.results
        combined.rejections += single.rejections
        combined.duplicates += single.duplicates
        combined.changes += single.changes
        if isinstance(event.request_id, str) and event.request_id:
            known.setdefault(event.request_id, event.fingerprint())
    return combined


# -- 1. serial order -------------------------------------------------------------------------


def test_a_run_equals_executing_its_events_one_at_a_time():
    ledger = build_ledger()
    events = generate_events(400, accounts=15, seed=7, bad_fraction=0.05, duplicate_fraction=0.05)
    together = run_serial(ledger, events)
    apart = run_one_at_a_time(ledger, events)
    assert together.state == apart.state
    assert together.results == apart.results
    assert together.rejections == apart.rejections
    assert together.duplicates == apart.duplicates
    assert together.changes == apart.changes


def test_the_order_of_a_dependent_pair_decides_the_outcome():
    ledger = counter_ledger()
    set_five = Event("set", "r1", {"k": "a", "value": 5})
    double_it = Event("double", "r2", {"k": "a"})
    set_then_double = run_serial(ledger, [set_five, double_it], {"t": {"a": 1}})
    double_then_set = run_serial(ledger, [double_it, set_five], {"t": {"a": 1}})
    assert set_then_double.state == {"t": {"a": 10}}
    assert double_then_set.state == {"t": {"a": 5}}


def test_results_come_out_in_event_order():
    ledger = counter_ledger()
    events = [
        Event("double", "r1", {"k": "a"}),
        Event("set", "r2", {"k": "b", "value": 3}),
        Event("double", "r3", {"k": "b"}),
    ]
    result = run_serial(ledger, events, {"t": {"a": 2}})
    assert result.results == [
        Result("double", "r1", {"doubled": 4}),
        Result("set", "r2", {"set": 3}),
        Result("double", "r3", {"doubled": 6}),
    ]


# -- 2. deterministic replay -----------------------------------------------------------------


def test_replaying_the_same_input_gives_an_equal_run_result(other_process: OtherHashSeed):
    """Here, and in a process whose hash seed is another (where an order of a set of text
    would change)."""
    ledger = build_ledger()
    events = generate_events(500, accounts=20, seed=11, bad_fraction=0.05, duplicate_fraction=0.05)
    first = run_serial(ledger, events)
    assert run_serial(ledger, events) == first
    assert other_process.call(run_serial, ledger, events) == first
    assert first.rejections, "the workload should contain faulty events"
    assert first.duplicates, "the workload should contain retries"


# -- 3. one row, one buffer ------------------------------------------------------------------


def write_through_one_read_through_other(event, ctx, first, second):
    first.write(first.read_or(0) + 5)
    ctx.emit(second.read())


def two_bindings_ledger(second_table: str = "t") -> StreamingLedger:
    ledger = StreamingLedger.create("buffers")
    ledger.declare_state("t")
    ledger.declare_state("u")
    (
        ledger.using_stream("s")
        .apply(write_through_one_read_through_other)
        .on("t", lambda e: e["first"], "first", AccessType.READ_WRITE)
        .on(second_table, lambda e: e["second"], "second", AccessType.READ)
    )
    return ledger


def test_a_write_through_one_binding_is_visible_through_another_on_the_same_row():
    result = run_serial(two_bindings_ledger(), [ev("r1", first="a", second="a")], {"t": {"a": 1}})
    assert result.results == [Result("s", "r1", 6)]
    assert result.state == {"t": {"a": 6}, "u": {}}


def test_bindings_on_different_rows_do_not_share_a_buffer():
    state = {"t": {"a": 1, "b": 100}}
    result = run_serial(two_bindings_ledger(), [ev("r1", first="a", second="b")], state)
    assert result.results == [Result("s", "r1", 100)]


def test_the_same_key_in_another_table_is_another_row():
    state = {"t": {"a": 1}, "u": {"a": 100}}
    result = run_serial(two_bindings_ledger("u"), [ev("r1", first="a", second="a")], state)
    assert result.results == [Result("s", "r1", 100)]
    assert result.state == {"t": {"a": 6}, "u": {"a": 100}}


def test_a_row_bound_twice_gives_one_change():
    result = run_serial(two_bindings_ledger(), [ev("r1", first="a", second="a")], {"t": {"a": 1}})
    assert result.changes == [Change("r1", "t", "a", 1, 6)]


def test_a_self_transfer_in_the_bank_conserves_money():
    ledger = build_ledger()
    state = {"accounts": {"acct-1": 1_000}, "asset_ledger": {"asset-1": 50}}
    transfer = Event(
        "transfers",
        "r1",
        {
            "source_account_id": "acct-1",
            "target_account_id": "acct-1",
            "source_asset_id": "asset-1",
            "target_asset_id": "asset-1",
            "amount": 300,
            "asset_amount": 20,
        },
    )
    result = run_serial(ledger, [transfer], state)
    assert result.state == state
    assert result.results[0].payload["status"] == "SUCCESS"
    assert result.results[0].payload["source_balance"] == 1_000
    assert result.results[0].payload["target_balance"] == 1_000


# -- 4. missing rows -------------------------------------------------------------------------


def emit_read(event, ctx, row):
    ctx.emit({"value": row.read()})


def emit_read_or(event, ctx, row):
    ctx.emit({"value": row.read_or(event["default"])})


def write_none(event, ctx, row):
    row.write(None)


def delete(event, ctx, row):
    row.delete()


def test_a_missing_row_reads_as_none():
    result = run_serial(one_row_ledger(emit_read, AccessType.READ), [ev("r1", k="nobody")])
    assert result.results == [Result("s", "r1", {"value": None})]


def test_read_or_gives_the_default_for_a_missing_row():
    ledger = one_row_ledger(emit_read_or, AccessType.READ)
    result = run_serial(ledger, [ev("r1", k="nobody", default=42)])
    assert result.results == [Result("s", "r1", {"value": 42})]


def test_read_or_gives_the_value_of_an_existing_row():
    ledger = one_row_ledger(emit_read_or, AccessType.READ)
    result = run_serial(ledger, [ev("r1", k="a", default=42)], {"t": {"a": 7}})
    assert result.results == [Result("s", "r1", {"value": 7})]


def test_writing_none_removes_the_row():
    ledger = one_row_ledger(write_none, AccessType.WRITE)
    result = run_serial(ledger, [ev("r1", k="a")], {"t": {"a": 7, "b": 8}})
    assert result.state == {"t": {"b": 8}}


def test_delete_removes_the_row():
    ledger = one_row_ledger(delete, AccessType.WRITE)
    result = run_serial(ledger, [ev("r1", k="a")], {"t": {"a": 7, "b": 8}})
    assert result.state == {"t": {"b": 8}}


def test_deleting_a_missing_row_leaves_it_missing():
    ledger = one_row_ledger(delete, AccessType.WRITE)
    result = run_serial(ledger, [ev("r1", k="nobody")], {"t": {"b": 8}})
    assert result.state == {"t": {"b": 8}}
    assert result.applied_count == 1


def test_a_deleted_row_reads_as_none_later_in_the_same_transaction():
    def delete_then_read(event, ctx, row):
        row.delete()
        ctx.emit(row.read_or("gone"))

    result = run_serial(one_row_ledger(delete_then_read), [ev("r1", k="a")], {"t": {"a": 7}})
    assert result.results == [Result("s", "r1", "gone")]
    assert result.state == {"t": {}}


# -- 5. access types -------------------------------------------------------------------------

OPERATIONS: dict[str, Callable[[Any], Any]] = {
    "read": lambda row: row.read(),
    "read_or": lambda row: row.read_or(0),
    "write": lambda row: row.write(99),
    "delete": lambda row: row.delete(),
    "add": lambda row: row.add(1),
}

ALLOWED = {
    AccessType.READ: {"read", "read_or"},
    AccessType.WRITE: {"write", "delete"},
    AccessType.ADD: {"add"},
    AccessType.READ_WRITE: {"read", "read_or", "write", "delete", "add"},
}

ACCESS_CASES = [
    (access, operation, operation in ALLOWED[access])
    for access in AccessType
    for operation in OPERATIONS
]


def operate(event, ctx, row):
    ctx.emit("before the operation")
    OPERATIONS[event["operation"]](row)


@pytest.mark.parametrize(
    ("access", "operation"),
    [(a, o) for a, o, allowed in ACCESS_CASES if not allowed],
    ids=lambda v: v.name if isinstance(v, AccessType) else v,
)
def test_an_operation_the_access_type_forbids_is_an_access_violation(access, operation):
    state = {"t": {"a": 10}}
    result = run_serial(
        one_row_ledger(operate, access), [ev("r1", k="a", operation=operation)], state
    )
    rejection = only_rejection(result)
    assert rejection.reason == "access_violation"
    assert f"through 'row', bound as {access.name}" in rejection.detail
    assert_no_effect(result, state)


@pytest.mark.parametrize(
    ("access", "operation"),
    [(a, o) for a, o, allowed in ACCESS_CASES if allowed],
    ids=lambda v: v.name if isinstance(v, AccessType) else v,
)
def test_an_operation_the_access_type_allows_is_applied(access, operation):
    result = run_serial(
        one_row_ledger(operate, access), [ev("r1", k="a", operation=operation)], {"t": {"a": 10}}
    )
    assert result.rejections == []
    assert result.applied_count == 1
    assert result.results == [Result("s", "r1", "before the operation")]


def test_read_write_can_read_write_add_and_delete_in_one_transaction():
    def everything(event, ctx, row):
        row.write(row.read() + 1)
        row.add(10)
        ctx.emit(row.read_or(0))
        row.delete()

    result = run_serial(one_row_ledger(everything), [ev("r1", k="a")], {"t": {"a": 1}})
    assert result.results == [Result("s", "r1", 12)]
    assert result.state == {"t": {}}


def test_add_to_a_missing_row_starts_from_zero():
    def add_five(event, ctx, row):
        row.add(5)

    result = run_serial(one_row_ledger(add_five, AccessType.ADD), [ev("r1", k="new")])
    assert result.state == {"t": {"new": 5}}
    assert result.changes == [Change("r1", "t", "new", None, 5)]


def test_adds_to_one_row_accumulate():
    def add_amount(event, ctx, row):
        row.add(event["amount"])

    ledger = one_row_ledger(add_amount, AccessType.ADD)
    events = [ev("r1", k="a", amount=5), ev("r2", k="a", amount=-2), ev("r3", k="a", amount=7)]
    assert run_serial(ledger, events).state == {"t": {"a": 10}}


def test_add_through_read_write_on_a_non_int_table_is_a_type_error():
    def add_to_document(event, ctx, row):
        row.add(1)

    ledger = one_row_ledger(add_to_document, AccessType.READ_WRITE, value_type=dict)
    state = {"t": {"a": {"x": 1}}}
    result = run_serial(ledger, [ev("r1", k="a"), ev("r2", k="missing")], state)
    assert [r.reason for r in result.rejections] == ["type_error", "type_error"]
    assert_no_effect(result, state)


# -- 6. abort --------------------------------------------------------------------------------


def write_emit_abort(event, ctx, row):
    row.write(123)
    ctx.emit("should vanish")
    ctx.abort("customer cancelled")
    row.write(456)  # never reached


def test_abort_discards_writes_and_results():
    state = {"t": {"a": 1}}
    result = run_serial(one_row_ledger(write_emit_abort), [ev("r1", k="a")], state)
    assert_no_effect(result, state)
    assert result.rejections == [Rejection("s", "r1", "aborted", "customer cancelled")]


def test_an_abort_does_not_affect_the_next_event():
    def maybe_abort(event, ctx, row):
        row.add(1)
        if event.get("abort"):
            ctx.abort()

    ledger = one_row_ledger(maybe_abort)
    result = run_serial(ledger, [ev("r1", k="a", abort=True), ev("r2", k="a")])
    assert result.state == {"t": {"a": 1}}
    assert [o.status for o in result.outcomes] == ["rejected", "applied"]


# -- 7. faulty events never stop the ledger --------------------------------------------------


def write_and_emit(event, ctx, row):
    ctx.emit("ran")
    row.write(event["value"])


STATE = {"t": {"a": 1}}


def test_a_key_function_that_raises_is_a_bad_key():
    result = run_serial(one_row_ledger(write_and_emit), [ev("r1", value=5)], STATE)
    rejection = only_rejection(result)
    assert rejection.reason == "bad_key"
    assert "KeyError" in rejection.detail
    assert_no_effect(result, STATE)


def test_a_key_function_that_returns_none_is_a_bad_key():
    result = run_serial(one_row_ledger(write_and_emit), [ev("r1", k=None, value=5)], STATE)
    assert only_rejection(result).reason == "bad_key"
    assert_no_effect(result, STATE)


@pytest.mark.parametrize("request_id", [None, "", 42, "with\x00nul"])
def test_an_event_without_a_usable_request_id_is_an_invalid_event(request_id):
    result = run_serial(one_row_ledger(write_and_emit), [ev(request_id, k="a", value=5)], STATE)
    assert only_rejection(result).reason == "invalid_event"
    assert_no_effect(result, STATE)


def test_an_event_of_an_unknown_stream_is_an_invalid_event():
    event = Event("withdrawals", "r1", {"k": "a", "value": 5})
    result = run_serial(one_row_ledger(write_and_emit), [event], STATE)
    rejection = only_rejection(result)
    assert rejection.reason == "invalid_event"
    assert "unknown stream 'withdrawals'" in rejection.detail
    assert_no_effect(result, STATE)


@pytest.mark.parametrize("payload", [None, ["k", "a"], "k=a", 5])
def test_a_payload_that_is_not_an_object_is_an_invalid_event(payload):
    result = run_serial(one_row_ledger(write_and_emit), [Event("s", "r1", payload)], STATE)
    rejection = only_rejection(result)
    assert rejection.reason == "invalid_event"
    assert "payload must be an object" in rejection.detail
    assert_no_effect(result, STATE)


@pytest.mark.parametrize("value", ["5", 5.0, [5], {"v": 5}])
def test_writing_a_value_of_the_wrong_type_is_a_type_error(value):
    result = run_serial(one_row_ledger(write_and_emit), [ev("r1", k="a", value=value)], STATE)
    assert only_rejection(result).reason == "type_error"
    assert_no_effect(result, STATE)


def test_writing_a_non_object_to_a_dict_table_is_a_type_error():
    ledger = one_row_ledger(write_and_emit, value_type=dict)
    state = {"t": {"a": {"x": 1}}}
    result = run_serial(ledger, [ev("r1", k="a", value=[1, 2])], state)
    assert only_rejection(result).reason == "type_error"
    assert_no_effect(result, state)


def test_a_key_of_the_wrong_type_for_a_str_table_is_a_type_error():
    result = run_serial(one_row_ledger(write_and_emit), [ev("r1", k=7, value=5)], STATE)
    assert only_rejection(result).reason == "type_error"
    assert_no_effect(result, STATE)


def test_a_key_of_the_wrong_type_for_an_int_table_is_a_type_error():
    ledger = one_row_ledger(write_and_emit, key_type=int)
    state = {"t": {7: 1}}
    result = run_serial(ledger, [ev("r1", k="7", value=5)], state)
    assert only_rejection(result).reason == "type_error"
    assert_no_effect(result, state)


@pytest.mark.parametrize("value", [INT64_MAX + 1, INT64_MIN - 1, 10**30])
def test_writing_an_int_outside_int64_is_an_overflow(value):
    result = run_serial(one_row_ledger(write_and_emit), [ev("r1", k="a", value=value)], STATE)
    assert only_rejection(result).reason == "overflow"
    assert_no_effect(result, STATE)


def test_writing_the_int64_limits_is_allowed():
    ledger = one_row_ledger(write_and_emit)
    events = [ev("r1", k="max", value=INT64_MAX), ev("r2", k="min", value=INT64_MIN)]
    result = run_serial(ledger, events)
    assert result.state == {"t": {"max": INT64_MAX, "min": INT64_MIN}}


@pytest.mark.parametrize(("start", "delta"), [(INT64_MAX, 1), (INT64_MIN, -1), (0, 2**63)])
def test_adding_past_the_int64_range_is_an_overflow(start, delta):
    def add_delta(event, ctx, row):
        ctx.emit("ran")
        row.add(event["delta"])

    state = {"t": {"a": start}}
    result = run_serial(
        one_row_ledger(add_delta, AccessType.ADD), [ev("r1", k="a", delta=delta)], state
    )
    assert only_rejection(result).reason == "overflow"
    assert_no_effect(result, state)


def test_an_exception_in_the_function_is_a_function_error_naming_it():
    def divide(event, ctx, row):
        row.write(1)
        ctx.emit("ran")
        row.write(event["value"] / 0)

    result = run_serial(one_row_ledger(divide), [ev("r1", k="a", value=5)], STATE)
    assert only_rejection(result).reason == "function_error: ZeroDivisionError: division by zero"
    assert_no_effect(result, STATE)


def test_a_faulty_event_does_not_stop_the_events_after_it():
    events = [ev("r1", k="a", value=5.5), ev("r2", value=1), ev("r3", k="b", value=2)]
    result = run_serial(one_row_ledger(write_and_emit), events, STATE)
    assert result.state == {"t": {"a": 1, "b": 2}}
    assert [o.status for o in result.outcomes] == ["rejected", "rejected", "applied"]


def test_catching_an_abort_with_bare_except_still_rejects():
    caught = []

    def stubborn(event, ctx, row):
        row.write(5)
        try:
            ctx.abort("first thoughts")
        except BaseException as exc:
            caught.append(exc)
        row.write(6)
        ctx.emit("carried on")

    result = run_serial(one_row_ledger(stubborn), [ev("r1", k="a")], STATE)
    assert len(caught) == 1
    assert only_rejection(result).reason == "aborted"
    assert_no_effect(result, STATE)


def test_catching_an_access_violation_with_bare_except_still_rejects():
    caught = []

    def sneaky(event, ctx, row):
        try:
            row.write(5)
        except BaseException as exc:
            caught.append(exc)
        ctx.emit(row.read())

    result = run_serial(one_row_ledger(sneaky, AccessType.READ), [ev("r1", k="a")], STATE)
    assert len(caught) == 1
    assert only_rejection(result).reason == "access_violation"
    assert_no_effect(result, STATE)


def test_catching_a_type_error_and_raising_another_keeps_the_first_reason():
    def messy(event, ctx, row):
        try:
            row.write("five")
        except BaseException:
            raise RuntimeError("cleanup failed") from None

    result = run_serial(one_row_ledger(messy), [ev("r1", k="a")], STATE)
    assert only_rejection(result).reason == "type_error"


def test_a_faulty_event_gets_the_same_rejection_on_replay():
    def divide(event, ctx, row):
        row.write(1 // event["d"])

    events = [ev("r1", k="a", d=0), ev("r2", k=None, d=1), Event("x", "r3", {})]
    ledger = one_row_ledger(divide)
    first = run_serial(ledger, events).rejections
    assert [(r.stream, r.request_id, r.reason) for r in first] == [
        ("s", "r1", "function_error: ZeroDivisionError: integer division or modulo by zero"),
        ("s", "r2", "bad_key"),
        ("x", "r3", "invalid_event"),
    ]
    assert run_serial(ledger, events).rejections == first


# -- 8. idempotency --------------------------------------------------------------------------


def add_amount(event, ctx, row):
    row.add(event["amount"])
    ctx.emit(event["amount"])


def adder() -> StreamingLedger:
    return one_row_ledger(add_amount, AccessType.ADD)


def test_a_retry_with_the_same_payload_is_a_duplicate_that_exists():
    events = [ev("r1", k="a", amount=5), ev("r1", k="a", amount=5)]
    result = run_serial(adder(), events)
    assert result.state == {"t": {"a": 5}}
    assert result.results == [Result("s", "r1", 5)]
    assert result.duplicates == [Duplicate("s", "r1", "exists")]


def test_a_reused_request_id_with_another_payload_is_exists_with_different_payload():
    events = [ev("r1", k="a", amount=5), ev("r1", k="a", amount=500)]
    result = run_serial(adder(), events)
    assert result.state == {"t": {"a": 5}}
    assert result.duplicates == [Duplicate("s", "r1", "exists_with_different_payload")]


def test_a_reused_request_id_on_another_stream_is_exists_with_different_payload():
    ledger = StreamingLedger.create("two_streams")
    table = ledger.declare_state("t")
    ledger.using_stream("s").apply(add_amount).on(table, by_k, "row", AccessType.ADD)
    ledger.using_stream("v").apply(add_amount).on(table, by_k, "row", AccessType.ADD)
    payload = {"k": "a", "amount": 5}
    result = run_serial(ledger, [Event("s", "r1", payload), Event("v", "r1", payload)])
    assert result.duplicates == [Duplicate("v", "r1", "exists_with_different_payload")]


def test_payload_key_order_does_not_make_a_different_payload():
    events = [Event("s", "r1", {"k": "a", "amount": 5}), Event("s", "r1", {"amount": 5, "k": "a"})]
    assert run_serial(adder(), events).duplicates == [Duplicate("s", "r1", "exists")]


def test_a_retry_of_a_rejected_event_is_a_duplicate():
    events = [ev("r1", k="a", amount=5.0), ev("r1", k="a", amount=5.0), ev("r1", k="a", amount=5)]
    result = run_serial(adder(), events)
    assert [r.reason for r in result.rejections] == ["type_error"]
    assert result.duplicates == [
        Duplicate("s", "r1", "exists"),
        Duplicate("s", "r1", "exists_with_different_payload"),
    ]
    assert result.state == {"t": {}}


def test_a_retry_of_an_event_of_an_unknown_stream_is_a_duplicate():
    event = Event("nowhere", "r1", {"k": "a"})
    result = run_serial(adder(), [event, event])
    assert [r.reason for r in result.rejections] == ["invalid_event"]
    assert result.duplicates == [Duplicate("nowhere", "r1", "exists")]


def test_events_without_request_id_are_never_duplicates_of_each_other():
    result = run_serial(adder(), [ev(None, k="a", amount=5), ev(None, k="a", amount=5)])
    assert [r.reason for r in result.rejections] == ["invalid_event", "invalid_event"]
    assert result.duplicates == []


def test_request_ids_known_from_an_earlier_run_make_duplicates():
    first_run = [ev("r1", k="a", amount=5), ev("r2", k="a", amount=7)]
    known = {e.request_id: e.fingerprint() for e in first_run}
    second_run = [ev("r1", k="a", amount=5), ev("r2", k="a", amount=70), ev("r3", k="a", amount=1)]
    result = run_serial(adder(), second_run, {"t": {"a": 12}}, known)
    assert result.duplicates == [
        Duplicate("s", "r1", "exists"),
        Duplicate("s", "r2", "exists_with_different_payload"),
    ]
    assert result.state == {"t": {"a": 13}}
    assert result.results == [Result("s", "r3", 1)]


# -- every event ends as exactly one of applied / rejected / duplicate -----------------------


def test_every_event_has_exactly_one_outcome_in_event_order():
    events = [
        ev("r1", k="a", amount=1),
        ev("r2", amount=1),
        ev("r1", k="a", amount=1),
        Event("nowhere", "r3", {}),
        ev(None, k="a", amount=1),
        ev("r4", k="b", amount=2),
    ]
    result = run_serial(adder(), events)
    assert len(result.outcomes) == len(events)
    assert [o.position for o in result.outcomes] == list(range(len(events)))
    assert [o.request_id for o in result.outcomes] == [e.request_id for e in events]
    assert [o.status for o in result.outcomes] == [
        "applied",
        "rejected",
        "duplicate",
        "rejected",
        "rejected",
        "applied",
    ]


def test_outcome_counts_add_up_over_a_generated_workload():
    events = generate_events(600, accounts=25, seed=5, bad_fraction=0.05, duplicate_fraction=0.05)
    result = run_serial(build_ledger(), events)
    statuses = [o.status for o in result.outcomes]
    assert len(statuses) == len(events)
    assert statuses.count("rejected") == len(result.rejections)
    assert statuses.count("duplicate") == len(result.duplicates)
    assert result.applied_count + len(result.rejections) + len(result.duplicates) == len(events)


# -- 9. money is integers --------------------------------------------------------------------


@pytest.mark.parametrize("amount", [5.0, 5.5, True, "5"])
def test_an_amount_that_is_not_an_int_is_not_added(amount):
    result = run_serial(adder(), [ev("r1", k="a", amount=amount)], STATE)
    assert only_rejection(result).reason == "type_error"
    assert_no_effect(result, STATE)


def test_a_bool_is_not_an_int_value():
    result = run_serial(one_row_ledger(write_and_emit), [ev("r1", k="a", value=True)], STATE)
    assert only_rejection(result).reason == "type_error"
    assert_no_effect(result, STATE)


@pytest.mark.parametrize("amount", [100.0, 99.5, True])
def test_a_bank_deposit_of_a_non_integer_amount_is_rejected(amount):
    deposit = Event(
        "deposits",
        "r1",
        {"account_id": "acct-1", "asset_id": "asset-1", "amount": amount, "asset_amount": 1},
    )
    result = run_serial(build_ledger(), [deposit])
    assert only_rejection(result).reason == "aborted"
    assert result.state == {"accounts": {}, "asset_ledger": {}}


# -- values are copied -----------------------------------------------------------------------


def test_mutating_a_read_dict_without_writing_it_has_no_effect():
    def mutate(event, ctx, row):
        doc = row.read()
        doc["balance"] = 1_000_000
        doc["tags"].append("rich")

    state = {"t": {"a": {"balance": 1, "tags": []}}}
    result = run_serial(one_row_ledger(mutate, value_type=dict), [ev("r1", k="a")], state)
    assert result.state == {"t": {"a": {"balance": 1, "tags": []}}}
    assert result.changes == []


def test_mutating_a_dict_after_writing_it_does_not_change_the_stored_value():
    def write_then_mutate(event, ctx, row):
        doc = {"balance": 2}
        row.write(doc)
        doc["balance"] = 3

    result = run_serial(one_row_ledger(write_then_mutate, value_type=dict), [ev("r1", k="a")])
    assert result.state == {"t": {"a": {"balance": 2}}}


def test_mutating_an_emitted_result_after_emit_does_not_change_it():
    def emit_then_mutate(event, ctx, row):
        out = {"n": 1}
        ctx.emit(out)
        out["n"] = 2

    result = run_serial(one_row_ledger(emit_then_mutate), [ev("r1", k="a")])
    assert result.results == [Result("s", "r1", {"n": 1})]


def test_a_function_mutating_its_event_does_not_change_the_input_event():
    def mutate_event(event, ctx, row):
        event["k"] = "changed"
        event["nested"]["x"] = 2

    event = ev("r1", k="a", nested={"x": 1})
    run_serial(one_row_ledger(mutate_event), [event, event])
    assert event.payload == {"k": "a", "nested": {"x": 1}}


def test_the_input_state_is_not_mutated():
    def rewrite(event, ctx, row):
        doc = row.read_or({})
        doc["n"] = doc.get("n", 0) + 1
        row.write(doc)

    state = {"t": {"a": {"n": 1}, "b": {"n": 5}}}
    snapshot = copy.deepcopy(state)
    ledger = one_row_ledger(rewrite, value_type=dict)
    result = run_serial(ledger, [ev("r1", k="a"), ev("r2", k="c")], state)
    assert state == snapshot
    assert result.state == {"t": {"a": {"n": 2}, "b": {"n": 5}, "c": {"n": 1}}}


def test_the_input_state_is_not_mutated_by_a_bank_workload():
    state = {"accounts": {"acct-000000": 500}, "asset_ledger": {"asset-000000": 50}}
    snapshot = copy.deepcopy(state)
    run_serial(build_ledger(), generate_events(200, accounts=5, seed=1), state)
    assert state == snapshot


# -- the change log --------------------------------------------------------------------------


def test_the_change_log_records_before_and_after_of_every_written_row():
    def move(event, ctx, source, target, note):
        source.write(source.read_or(0) - event["amount"])
        target.add(event["amount"])
        note.delete()

    ledger = StreamingLedger.create("moves")
    balances = ledger.declare_state("balances")
    notes = ledger.declare_state("notes", value_type=str)
    (
        ledger.using_stream("moves")
        .apply(move)
        .on(balances, lambda e: e["from"], "source", AccessType.READ_WRITE)
        .on(balances, lambda e: e["to"], "target", AccessType.ADD)
        .on(notes, lambda e: e["from"], "note", AccessType.WRITE)
    )
    state = {"balances": {"x": 10}, "notes": {"x": "hello"}}
    events = [
        Event("moves", "m1", {"from": "x", "to": "y", "amount": 3}),
        Event("moves", "m2", {"from": "y", "to": "x", "amount": 1}),
    ]
    result = run_serial(ledger, events, state)
    assert result.changes == [
        Change("m1", "balances", "x", 10, 7),
        Change("m1", "balances", "y", None, 3),
        Change("m1", "notes", "x", "hello", None),
        Change("m2", "balances", "y", 3, 2),
        Change("m2", "balances", "x", 7, 8),
        Change("m2", "notes", "y", None, None),
    ]


def test_rows_only_read_are_not_in_the_change_log():
    result = run_serial(one_row_ledger(emit_read, AccessType.READ), [ev("r1", k="a")], STATE)
    assert result.changes == []
    assert result.applied_count == 1


def test_the_change_log_folds_to_the_final_state():
    events = generate_events(500, accounts=10, seed=9, bad_fraction=0.05, duplicate_fraction=0.05)
    result = run_serial(build_ledger(), events)
    folded: dict[str, dict[Any, Any]] = {"accounts": {}, "asset_ledger": {}}
    for change in result.changes:
        assert folded[change.table].get(change.key) == change.before
        if change.after is None:
            folded[change.table].pop(change.key, None)
        else:
            folded[change.table][change.key] = change.after
    assert folded == result.state


def test_an_exception_message_with_a_nul_is_kept_storable_and_short():
    """The reason is stored in PostgreSQL, which holds no NUL; a message can be any size."""

    def fails(event, ctx, row):
        raise ValueError("bad\x00byte " + "x" * 10_000)

    result = run_serial(one_row_ledger(fails), [ev("r1", k="a")], STATE)
    rejection = only_rejection(result)
    assert rejection.reason.startswith("function_error: ValueError: bad\\x00byte xxx")
    assert "\x00" not in rejection.reason and len(rejection.reason) < 600
