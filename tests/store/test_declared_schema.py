"""A ledger's tables and views come from its declarations, through generated, recorded
migrations; a change that would lose data is refused."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, text

from ledger_engine import AccessType, StreamingLedger
from ledger_engine.errors import SchemaMismatch
from ledger_engine.store.database import connect
from ledger_engine.store.migrations import migrate
from ledger_engine.store.schema import apply_declared_schema, check_declared_schema
from tests.support.database import rows

HOSTILE_NAMES = [
    "Asset Ledger",
    'O\'Brien "book"; DROP TABLE ledger_events; --',
    "Übersicht € 口座",
    "ledger_events",
    "x" * 1000,
]


def _put(event, ctx, row):
    row.write(event["value"])


def ledger_of(
    tables: dict[str, tuple[type, type]],
    views: dict[str, str] | None = None,
    units: dict[str, str] | None = None,
):
    """A ledger named 'simple example' with `tables` (name -> key type, value type), one
    stream writing each, `views`, and `units` (table name -> unit) for some of its tables."""
    ledger = StreamingLedger.create("simple example")
    for number, (name, (key_type, value_type)) in enumerate(tables.items()):
        unit = (units or {}).get(name)
        table = ledger.declare_state(name, key_type=key_type, value_type=value_type, unit=unit)
        ledger.using_stream(f"puts {number}").apply(_put).on(
            table, lambda e: e["key"], "row", AccessType.WRITE
        )
    for name, query in (views or {}).items():
        ledger.declare_view(name, query)
    ledger.check()
    return ledger


@pytest.fixture
def core_engine(empty_database_url: str) -> Iterator[Engine]:
    """A database with the core migrations only: no application's table."""
    engine = connect(empty_database_url)
    migrate(engine)
    yield engine
    engine.dispose()


# The columns every declared table has besides its key and value: where its rows' last changes
# are in the change log (sql/0025_change_links.sql).
LAST_CHANGE = {
    "last_change_batch": "bigint",
    "last_change_position": "integer",
    "last_change_seq": "integer",
}


def declared(key_type: str, value_type: str) -> dict[str, str]:
    """The columns of a declared table of these PostgreSQL types."""
    return {"key": key_type, "value": value_type, **LAST_CHANGE}


def columns(engine: Engine, sql_name: str) -> dict[str, str]:
    found = rows(
        engine,
        "SELECT column_name, data_type FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND table_name = :name",
        name=sql_name,
    )
    return dict(found)


def test_the_core_migrations_create_no_application_table(core_engine):
    tables = rows(
        core_engine,
        "SELECT table_name FROM information_schema.tables"
        " WHERE table_schema = current_schema() AND table_name NOT LIKE 'ledger\\_%'",
    )
    # The core's views for readers: request outcomes, and reconciliation's (sql/0019).
    assert sorted(tables) == [("open_breaks",), ("request_outcomes",), ("statement_drift",)]


def test_each_declared_table_gets_a_table_of_its_declared_types(core_engine):
    ledger = ledger_of({"Asset Ledger": (str, dict), "counts": (int, int), "notes": (str, str)})
    assert apply_declared_schema(core_engine, ledger) == 1
    tables = ledger.tables
    assert columns(core_engine, tables["Asset Ledger"].sql_name) == declared("text", "jsonb")
    assert columns(core_engine, "counts") == declared("bigint", "bigint")
    assert columns(core_engine, "notes") == declared("text", "text")
    recorded = rows(
        core_engine,
        "SELECT ledger, table_name, sql_name, key_type, value_type, version"
        " FROM ledger_declared_tables ORDER BY table_name",
    )
    assert recorded == [
        ("simple example", "Asset Ledger", tables["Asset Ledger"].sql_name, "text", "jsonb", 1),
        ("simple example", "counts", "counts", "bigint", "bigint", 1),
        ("simple example", "notes", "notes", "text", "text", 1),
    ]


def test_the_generated_migration_is_recorded_with_the_sql_it_ran(core_engine):
    ledger = ledger_of({"counts": (int, int)}, {"Big counts": "SELECT key FROM counts"})
    apply_declared_schema(core_engine, ledger)
    [(version, description, statements)] = rows(
        core_engine, "SELECT version, description, statements FROM ledger_declared_migrations"
    )
    assert version == 1
    assert description == "create table 'counts'; create view 'Big counts'"
    assert (
        'CREATE TABLE "counts" (\n    key bigint PRIMARY KEY,\n    value bigint NOT NULL,'
        in statements
    )
    view_name = ledger.views["Big counts"].sql_name
    assert f'CREATE VIEW "{view_name}" AS\nSELECT key FROM counts' in statements


def test_applying_the_same_declarations_again_changes_nothing(core_engine):
    ledger = ledger_of({"counts": (int, int)}, {"all counts": "SELECT * FROM counts"})
    assert apply_declared_schema(core_engine, ledger) == 1
    assert apply_declared_schema(core_engine, ledger) is None
    assert rows(core_engine, "SELECT count(*) FROM ledger_declared_migrations") == [(1,)]
    with core_engine.connect() as conn:
        check_declared_schema(conn, ledger)  # raises if the schema does not match


def test_a_growing_ledger_adds_its_new_table_in_a_new_version_and_keeps_the_rows(core_engine):
    apply_declared_schema(core_engine, ledger_of({"counts": (int, int)}))
    with core_engine.begin() as conn:
        conn.execute(text("INSERT INTO counts VALUES (1, 10)"))
    grown = ledger_of(
        {"counts": (int, int), "Asset Ledger": (str, int)},
        {"totals": "SELECT sum(value) AS total FROM counts"},
    )
    assert apply_declared_schema(core_engine, grown) == 2
    assert rows(core_engine, "SELECT key, value FROM counts") == [(1, 10)]
    assert rows(core_engine, "SELECT total FROM totals") == [(10,)]
    assert rows(core_engine, "SELECT version FROM ledger_declared_migrations ORDER BY 1") == [
        (1,),
        (2,),
    ]


def test_a_changed_view_is_recreated_in_a_new_version(core_engine):
    apply_declared_schema(core_engine, ledger_of({"counts": (int, int)}, {"v": "SELECT 1 AS n"}))
    changed = ledger_of({"counts": (int, int)}, {"v": "SELECT 2 AS n, 3 AS m"})
    assert apply_declared_schema(core_engine, changed) == 2
    assert rows(core_engine, "SELECT n, m FROM v") == [(2, 3)]


def test_a_type_change_under_written_rows_is_refused_and_changes_nothing(core_engine):
    apply_declared_schema(core_engine, ledger_of({"counts": (int, int)}))
    with core_engine.begin() as conn:
        conn.execute(text("INSERT INTO counts VALUES (1, 10)"))
    retyped = ledger_of({"counts": (int, str), "more": (int, int)})
    with pytest.raises(SchemaMismatch, match=r"table 'counts' .* has been written"):
        apply_declared_schema(core_engine, retyped)
    assert columns(core_engine, "counts") == declared("bigint", "bigint")
    assert columns(core_engine, "more") == {}  # the whole migration was rolled back
    assert rows(core_engine, "SELECT key, value FROM counts") == [(1, 10)]
    with core_engine.connect() as conn, pytest.raises(SchemaMismatch, match="not set up"):
        check_declared_schema(conn, retyped)


def test_a_type_change_of_a_never_written_table_is_applied(core_engine):
    apply_declared_schema(core_engine, ledger_of({"counts": (int, int)}))
    assert apply_declared_schema(core_engine, ledger_of({"counts": (str, dict)})) == 2
    assert columns(core_engine, "counts") == declared("text", "jsonb")


def test_a_table_left_out_of_the_declarations_keeps_its_rows(core_engine):
    apply_declared_schema(core_engine, ledger_of({"counts": (int, int), "old": (int, int)}))
    with core_engine.begin() as conn:
        conn.execute(text("INSERT INTO old VALUES (7, 70)"))
    assert apply_declared_schema(core_engine, ledger_of({"counts": (int, int)})) is None
    assert rows(core_engine, "SELECT key, value FROM old") == [(7, 70)]


def test_a_table_of_the_declared_shape_made_before_is_adopted(core_engine):
    # A database migrated before tables were generated holds the bank's tables already.
    with core_engine.begin() as conn:
        conn.execute(text("CREATE TABLE counts (key bigint PRIMARY KEY, value bigint NOT NULL)"))
        conn.execute(text("INSERT INTO counts VALUES (1, 10)"))
    assert apply_declared_schema(core_engine, ledger_of({"counts": (int, int)})) == 1
    [(statements,)] = rows(core_engine, "SELECT statements FROM ledger_declared_migrations")
    assert "CREATE TABLE" not in statements
    assert rows(core_engine, "SELECT key, value FROM counts") == [(1, 10)]
    # It now names its rows' last changes, as a table created by the platform does: none in
    # the change log for this row.
    assert columns(core_engine, "counts") == declared("bigint", "bigint")
    assert rows(core_engine, "SELECT last_change_batch FROM counts") == [(None,)]


def test_a_table_of_another_shape_in_the_way_is_refused(core_engine):
    with core_engine.begin() as conn:
        conn.execute(text("CREATE TABLE counts (key text, amount numeric)"))
    with pytest.raises(SchemaMismatch, match=r"'counts' .* is in the way"):
        apply_declared_schema(core_engine, ledger_of({"counts": (int, int)}))


def test_a_second_ledger_in_one_database_is_refused(core_engine):
    apply_declared_schema(core_engine, ledger_of({"counts": (int, int)}))
    other = StreamingLedger.create("another")
    table = other.declare_state("things")
    other.using_stream("puts").apply(_put).on(table, lambda e: e["key"], "row", AccessType.WRITE)
    with pytest.raises(SchemaMismatch, match=r"schema already holds ledger 'simple example'"):
        apply_declared_schema(core_engine, other)


def test_hostile_names_are_stored_as_data_and_their_tables_are_created(core_engine):
    ledger = ledger_of({name: (str, int) for name in HOSTILE_NAMES})
    apply_declared_schema(core_engine, ledger)
    recorded = dict(rows(core_engine, "SELECT table_name, sql_name FROM ledger_declared_tables"))
    assert recorded == {name: ledger.tables[name].sql_name for name in HOSTILE_NAMES}
    assert len(set(recorded.values())) == len(HOSTILE_NAMES)
    for sql_name in recorded.values():
        assert columns(core_engine, sql_name) == declared("text", "bigint")
    # The platform's own table of that name is untouched.
    assert "batch_id" in columns(core_engine, "ledger_events")


# --- Units ---------------------------------------------------------------------------------


def recorded_units(engine: Engine) -> list[tuple]:
    return rows(
        engine,
        "SELECT table_name, unit_code, unit_precision, version FROM ledger_declared_tables"
        " ORDER BY table_name",
    )


def test_a_tables_unit_is_recorded_with_it(core_engine):
    ledger = ledger_of({"counts": (int, int), "money": (str, int)}, units={"money": "EUR/2"})
    apply_declared_schema(core_engine, ledger)
    assert recorded_units(core_engine) == [("counts", None, None, 1), ("money", "EUR", 2, 1)]


def test_a_unit_declared_for_a_written_table_recorded_without_one_is_recorded(core_engine):
    # A ledger declared (and written) before it said what its integers count.
    apply_declared_schema(core_engine, ledger_of({"money": (str, int)}))
    with core_engine.begin() as conn:
        conn.execute(text("INSERT INTO money VALUES ('alice', 12345)"))
    assert (
        apply_declared_schema(
            core_engine, ledger_of({"money": (str, int)}, units={"money": "EUR/2"})
        )
        == 2
    )
    assert recorded_units(core_engine) == [("money", "EUR", 2, 2)]
    [(description,)] = rows(
        core_engine, "SELECT description FROM ledger_declared_migrations WHERE version = 2"
    )
    assert description == "declare table 'money' in unit EUR/2"
    assert rows(core_engine, "SELECT key, value FROM money") == [("alice", 12345)]


def test_another_unit_for_a_written_table_is_refused_and_changes_nothing(core_engine):
    apply_declared_schema(core_engine, ledger_of({"money": (str, int)}, units={"money": "EUR/2"}))
    with core_engine.begin() as conn:
        conn.execute(text("INSERT INTO money VALUES ('alice', 12345)"))
    for other in ("EUR/3", "USD/2"):
        changed = ledger_of({"money": (str, int)}, units={"money": other})
        with pytest.raises(SchemaMismatch, match=rf"counts in EUR/2 .* now says {other}"):
            apply_declared_schema(core_engine, changed)
    assert recorded_units(core_engine) == [("money", "EUR", 2, 1)]


def test_another_unit_for_a_never_written_table_is_recorded(core_engine):
    apply_declared_schema(core_engine, ledger_of({"money": (str, int)}, units={"money": "EUR/2"}))
    apply_declared_schema(core_engine, ledger_of({"money": (str, int)}, units={"money": "USD/2"}))
    assert recorded_units(core_engine) == [("money", "USD", 2, 2)]
