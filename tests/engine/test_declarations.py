"""Declaration errors: each is raised as soon as it can be seen, with a message naming it."""

from __future__ import annotations

import pytest

from ledger_engine import AccessType, DeclarationError, Event, StreamingLedger, run_serial
from ledger_engine.core.invariants import balanced, minimum
from ledger_engine.core.naming import sql_identifier


def _key(event: dict) -> str:
    return event["k"]


def one_row(event: dict, ctx, row) -> None:
    row.add(1)


def two_rows(event: dict, ctx, first, second) -> None:
    first.add(1)
    second.add(1)


@pytest.fixture
def ledger() -> StreamingLedger:
    return StreamingLedger.create("decl")


def test_a_bind_name_the_function_does_not_accept_is_rejected_at_on(ledger):
    table = ledger.declare_state("counts")
    stream = ledger.using_stream("hits").apply(one_row)
    with pytest.raises(DeclarationError, match=r"one_row has no parameter 'rwo'"):
        stream.on(table, _key, "rwo", AccessType.ADD)


def test_a_function_with_var_keywords_accepts_any_bind_name(ledger):
    def anything(event, ctx, **rows):
        rows["whatever"].add(1)

    table = ledger.declare_state("counts")
    ledger.using_stream("hits").apply(anything).on(table, _key, "whatever", AccessType.ADD)
    ledger.check()


def test_an_unbound_parameter_is_found_at_the_next_declaration(ledger):
    table = ledger.declare_state("counts")
    ledger.using_stream("hits").apply(two_rows).on(table, _key, "first", AccessType.ADD)
    with pytest.raises(DeclarationError, match=r"parameter\(s\) second of two_rows have no"):
        ledger.declare_state("other")


def test_an_unbound_parameter_is_found_at_the_next_stream_declaration(ledger):
    table = ledger.declare_state("counts")
    ledger.using_stream("hits").apply(two_rows).on(table, _key, "first", AccessType.ADD)
    with pytest.raises(DeclarationError, match=r"stream 'hits'.*second.*no binding"):
        ledger.using_stream("misses")


def test_an_unbound_parameter_is_found_by_check(ledger):
    table = ledger.declare_state("counts")
    ledger.using_stream("hits").apply(two_rows).on(table, _key, "first", AccessType.ADD)
    with pytest.raises(DeclarationError, match=r"second.*no binding"):
        ledger.check()


def test_an_unbound_parameter_is_found_at_the_first_run(ledger):
    table = ledger.declare_state("counts")
    ledger.using_stream("hits").apply(two_rows).on(table, _key, "first", AccessType.ADD)
    with pytest.raises(DeclarationError, match=r"second.*no binding"):
        run_serial(ledger, [Event("hits", "r1", {"k": "a"})])


def test_a_parameter_with_a_default_needs_no_binding(ledger):
    def optional(event, ctx, row, extra=None):
        row.add(1)

    table = ledger.declare_state("counts")
    ledger.using_stream("hits").apply(optional).on(table, _key, "row", AccessType.ADD)
    ledger.check()


def test_a_bind_name_used_twice_is_rejected(ledger):
    table = ledger.declare_state("counts")
    stream = ledger.using_stream("hits").apply(two_rows).on(table, _key, "first", AccessType.ADD)
    with pytest.raises(DeclarationError, match=r"binding 'first': bind name is used twice"):
        stream.on(table, _key, "first", AccessType.ADD)


def test_a_table_of_another_ledger_is_unknown(ledger):
    ledger.declare_state("counts")
    foreign = StreamingLedger.create("other").declare_state("counts")
    stream = ledger.using_stream("hits").apply(one_row)
    with pytest.raises(DeclarationError, match=r"unknown table .*'other'.*in ledger 'decl'"):
        stream.on(foreign, _key, "row", AccessType.ADD)


def test_an_undeclared_table_name_is_unknown(ledger):
    ledger.declare_state("counts")
    stream = ledger.using_stream("hits").apply(one_row)
    with pytest.raises(DeclarationError, match=r"unknown table 'tallies' in ledger 'decl'"):
        stream.on("tallies", _key, "row", AccessType.ADD)


def test_a_declared_table_can_be_named_by_string(ledger):
    ledger.declare_state("counts")
    ledger.using_stream("hits").apply(one_row).on("counts", _key, "row", AccessType.ADD)
    result = run_serial(ledger, [Event("hits", "r1", {"k": "a"})])
    assert result.state == {"counts": {"a": 1}}


def test_a_non_callable_key_function_is_rejected(ledger):
    table = ledger.declare_state("counts")
    stream = ledger.using_stream("hits").apply(one_row)
    with pytest.raises(DeclarationError, match=r"binding 'row': key function 'k' is not callable"):
        stream.on(table, "k", "row", AccessType.ADD)


def test_a_non_callable_transaction_function_is_rejected(ledger):
    with pytest.raises(DeclarationError, match=r"stream 'hits': transaction function"):
        ledger.using_stream("hits").apply("one_row")


def test_a_table_declared_twice_is_rejected(ledger):
    ledger.declare_state("counts")
    with pytest.raises(DeclarationError, match=r"table 'counts' is declared twice"):
        ledger.declare_state("counts", value_type=str)


def test_a_stream_declared_twice_is_rejected(ledger):
    table = ledger.declare_state("counts")
    ledger.using_stream("hits").apply(one_row).on(table, _key, "row", AccessType.ADD)
    with pytest.raises(DeclarationError, match=r"stream 'hits' is declared twice"):
        ledger.using_stream("hits")


def test_two_pending_starts_of_one_stream_cannot_both_apply(ledger):
    first = ledger.using_stream("hits")
    second = ledger.using_stream("hits")
    first.apply(one_row)
    with pytest.raises(DeclarationError, match=r"stream 'hits' is declared twice"):
        second.apply(two_rows)


@pytest.mark.parametrize("value_type", [str, dict])
def test_add_on_a_non_int_table_is_rejected(ledger, value_type):
    table = ledger.declare_state("notes", value_type=value_type)
    stream = ledger.using_stream("hits").apply(one_row)
    with pytest.raises(DeclarationError, match=r"ADD needs an int table, 'notes' holds"):
        stream.on(table, _key, "row", AccessType.ADD)


@pytest.mark.parametrize("value_type", [float, bool, list, "int"])
def test_an_invalid_value_type_is_rejected(ledger, value_type):
    with pytest.raises(DeclarationError, match=r"table 'counts': value_type must be int, str or"):
        ledger.declare_state("counts", value_type=value_type)


def test_an_invalid_key_type_is_rejected(ledger):
    with pytest.raises(DeclarationError, match=r"table 'counts': key_type must be str or int"):
        ledger.declare_state("counts", key_type=float)


def test_an_access_that_is_not_an_access_type_is_rejected(ledger):
    table = ledger.declare_state("counts")
    stream = ledger.using_stream("hits").apply(one_row)
    with pytest.raises(DeclarationError, match=r"access must be an AccessType"):
        stream.on(table, _key, "row", "add")


def test_a_function_without_event_and_ctx_is_rejected(ledger):
    def no_ctx(event):
        pass

    with pytest.raises(DeclarationError, match=r"must take \(event, ctx, \*\*rows\)"):
        ledger.using_stream("hits").apply(no_ctx)


@pytest.mark.parametrize(
    "name", ["Counts", "1counts", "with space", "ledger_counts", 'O\'Brien "book"', "Übersicht €"]
)
def test_any_text_names_a_table(ledger, name):
    table = ledger.declare_state(name)
    assert table.name == name
    assert table.sql_name == sql_identifier(name)


@pytest.mark.parametrize("name", ["", 5, None, "with\x00nul", "\ud800", "x" * 1025])
def test_a_name_that_cannot_be_stored_is_rejected(ledger, name):
    with pytest.raises(DeclarationError, match=r"table name"):
        ledger.declare_state(name)


@pytest.mark.parametrize(
    "invariant",
    [
        lambda: minimum("accounts", 0, name="x" * 1025),
        lambda: minimum("accounts", 0, name="with\x00nul"),
        # A default name joins every stream's label: past the limit, it cannot be one either.
        lambda: balanced("accounts", [f"stream {n:04} {'é' * 30}" for n in range(20)]),
    ],
)
def test_an_invariant_whose_name_cannot_be_stored_is_rejected(invariant):
    with pytest.raises(DeclarationError, match=r"invariant name"):
        invariant()


def test_a_ledger_stream_and_view_take_any_text_too():
    ledger = StreamingLedger.create("simple example")
    table = ledger.declare_state("Asset Ledger")
    ledger.using_stream("Deposits: €").apply(_touch).on(
        table, lambda e: e["k"], "row", AccessType.WRITE
    )
    view = ledger.declare_view("Balances, by account", "SELECT 1 AS one")
    ledger.check()
    assert ledger.name == "simple example"
    assert set(ledger.streams) == {"Deposits: €"}
    assert view.sql_name == sql_identifier("Balances, by account")


def test_a_ledger_without_streams_fails_check(ledger):
    ledger.declare_state("counts")
    with pytest.raises(DeclarationError, match=r"ledger 'decl' declares no stream"):
        ledger.check()


def test_payload_fields_given_as_one_string_are_rejected(ledger):
    stream = ledger.using_stream("hits").apply(one_row)
    with pytest.raises(DeclarationError, match=r"required fields must be a collection"):
        stream.payload_fields("k")


def test_a_payload_field_both_required_and_optional_is_rejected(ledger):
    stream = ledger.using_stream("hits").apply(one_row)
    with pytest.raises(DeclarationError, match=r"\['k'\] are both required and optional"):
        stream.payload_fields({"k"}, {"k", "note"})


def test_payload_fields_declared_twice_are_rejected(ledger):
    stream = ledger.using_stream("hits").apply(one_row).payload_fields({"k"})
    with pytest.raises(DeclarationError, match=r"payload fields are declared twice"):
        stream.payload_fields({"k"})


@pytest.mark.parametrize("name", ["", 5, "with\x00nul"])
def test_a_payload_field_that_is_not_a_usable_name_is_rejected(ledger, name):
    stream = ledger.using_stream("hits").apply(one_row)
    with pytest.raises(DeclarationError, match=r"is not a non-empty string"):
        stream.payload_fields({"k", name})


def _touch(event, ctx, row):
    row.write(1)


def _sample(count: int, *, rows: int, seed: int) -> list[Event]:
    return [Event("hits", f"r{n}", {"k": f"k{n % rows}"}) for n in range(count)]


def test_sample_events_are_declared_beside_the_tables(ledger):
    assert ledger.sample_events is None
    assert ledger.declare_sample_events(_sample) is _sample
    assert ledger.sample_events is _sample


def test_sample_events_that_cannot_take_count_rows_and_seed_are_rejected(ledger):
    def by_accounts(count: int, accounts: int, seed: int) -> list[Event]:
        return []

    with pytest.raises(
        DeclarationError, match=r"by_accounts must accept \(count, \*, rows, seed\)"
    ):
        ledger.declare_sample_events(by_accounts)
    with pytest.raises(DeclarationError, match=r"is not callable"):
        ledger.declare_sample_events([])  # type: ignore[arg-type]
    assert ledger.sample_events is None


def test_sample_events_are_declared_once(ledger):
    ledger.declare_sample_events(_sample)
    with pytest.raises(DeclarationError, match=r"declared twice"):
        ledger.declare_sample_events(_sample)
