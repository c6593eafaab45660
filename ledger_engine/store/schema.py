"""The schema an application declares: its tables and views, generated and recorded.

Each declared table is stored as a PostgreSQL table `(key, value)` named by its `sql_name`
(`ledger_engine.core.naming`): `key` is `text` or `bigint`, `value` is `bigint`, `text` or
`jsonb`, by the declared types, and the view `ledger_rows` shows every row of every declared
table (its declared name, its key as text, its value as JSON, the batch that last wrote it).
Each declared view is created from its query and granted to the readers; each declared
invariant is recorded for the audits to evaluate. The platform compares the declarations with
what it recorded in `ledger_declared_tables`, `ledger_declared_views` and
`ledger_declared_invariants` (`sql/0016_declared_schema.sql`), and what differs becomes the
ledger's next generated migration: one transaction, under the same advisory lock as the core
migrations, recorded with the exact SQL it ran in `ledger_declared_migrations`. So a ledger
grows (a new table, a new stream, a changed view) by declaring it.

A table's unit (`ledger_engine.core.money`) is recorded with it (`unit_code`,
`unit_precision`, `sql/0021_declared_units.sql`), where the views people query read it to show
amounts as money. A unit declared for a table recorded without one, or dropped, is recorded in
the next generated migration.

A change that would lose data is refused with `SchemaMismatch`: a table's key or value type
changed once the table was written (rows in it or entries in the change log), or its unit
changed to another (every amount in it would read as something else). A table no
longer declared is left as it is, with its rows. A table of the right shape that exists but
was never recorded (a database migrated before tables were generated) is adopted as it is.
Identifiers are quoted by `psycopg2.sql.Identifier`; labels are bound as parameters, or quoted
by `psycopg2.sql.Literal` where DDL takes no parameters (the names in `ledger_rows`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from psycopg2 import errors, sql
from sqlalchemy import Connection, Engine

from ledger_engine.core.declarations import StreamingLedger, Table, View
from ledger_engine.core.invariants import Invariant
from ledger_engine.core.money import Unit
from ledger_engine.core.records import canonical_json
from ledger_engine.errors import MigrationError, SchemaMismatch
from ledger_engine.store.locks import MIGRATION_LOCK
from ledger_engine.store.sql_files import identified, statement

KEY_TYPES: Mapping[type, str] = {str: "text", int: "bigint"}
VALUE_TYPES: Mapping[type, str] = {int: "bigint", str: "text", dict: "jsonb"}
# Every row of every declared table, for people and readers (`ledger balance`): the platform's
# view, recreated whenever the tables change.
ROWS_VIEW = "ledger_rows"

_LOCK = statement("migrations/lock")  # the core migrations' lock (MIGRATION_LOCK)
_RECORDED_TABLES = statement("schema/recorded_tables")
_RECORDED_VIEWS = statement("schema/recorded_views")
_RECORDED_INVARIANTS = statement("schema/recorded_invariants")
_OTHER_LEDGERS = statement("schema/other_ledgers")
_LAST_VERSION = statement("schema/last_version")
_COLUMNS = statement("schema/columns")
_WRITTEN_LOG = statement("schema/written_in_log")
_RECORD_MIGRATION = statement("schema/record_migration")
_RECORD_TABLE = statement("schema/record_table")
_RECORD_INVARIANT = statement("schema/record_invariant")
_RECORD_VIEW = statement("schema/record_view")


@dataclass(frozen=True)
class RecordedTable:
    """What the system of record says a declared table is stored as."""

    sql_name: str
    key_type: str
    value_type: str
    unit_code: str | None = None
    unit_precision: int | None = None

    @property
    def unit(self) -> Unit | None:
        """The unit recorded for the table, if any."""
        if self.unit_code is None or self.unit_precision is None:
            return None
        return Unit(self.unit_code, self.unit_precision)


@dataclass(frozen=True)
class SchemaChanges:
    """What the declarations add to the recorded schema: tables new or retyped, tables whose
    unit changed, views and invariants new or changed. Empty when the system of record matches
    the declarations."""

    new_tables: tuple[Table, ...] = ()
    retyped_tables: tuple[tuple[Table, RecordedTable], ...] = ()
    views: tuple[View, ...] = ()
    invariants: tuple[Invariant, ...] = ()
    changed_units: tuple[tuple[Table, RecordedTable], ...] = ()

    def __bool__(self) -> bool:
        return bool(
            self.new_tables
            or self.retyped_tables
            or self.views
            or self.invariants
            or self.changed_units
        )

    def description(self) -> str:
        parts = [f"create table {t.name!r}" for t in self.new_tables]
        parts += [f"retype empty table {t.name!r}" for t, _ in self.retyped_tables]
        parts += [
            f"declare table {t.name!r} in unit {str(t.unit) if t.unit else 'none'}"
            for t, _ in self.changed_units
        ]
        parts += [f"create view {v.name!r}" for v in self.views]
        parts += [f"record invariant {i.name!r}" for i in self.invariants]
        return "; ".join(parts)


def view_checksum(view: View) -> str:
    return hashlib.sha256(view.query.encode("utf-8")).hexdigest()


def invariant_sources(invariant: Invariant) -> str:
    """The invariant's sources as the JSON array `ledger_declared_invariants` keeps."""
    return canonical_json([{"stream": s, "field": f} for s, f in invariant.sources])


def invariant_checksum(invariant: Invariant) -> str:
    rule = [invariant.kind, invariant.table, invariant.minimum, invariant_sources(invariant)]
    return hashlib.sha256(canonical_json(rule).encode("utf-8")).hexdigest()


def declared_shape(table: Table) -> tuple[str, str]:
    """The PostgreSQL types of `table`'s key and value."""
    return KEY_TYPES[table.key_type], VALUE_TYPES[table.value_type]


def schema_changes(
    ledger: StreamingLedger,
    recorded_tables: Mapping[str, RecordedTable],
    recorded_views: Mapping[str, str],
    recorded_invariants: Mapping[str, str],
) -> SchemaChanges:
    """What differs between `ledger`'s declarations and what was recorded (by label): a pure
    comparison; whether a retyped table may be changed is for `apply_declared_schema`."""
    new, retyped, changed_units = [], [], []
    for table in ledger.tables.values():
        recorded = recorded_tables.get(table.name)
        if recorded is None:
            new.append(table)
        elif (recorded.key_type, recorded.value_type) != declared_shape(table):
            retyped.append((table, recorded))
        else:
            assert recorded.sql_name == table.sql_name, (recorded, table)
            if recorded.unit != table.unit:
                changed_units.append((table, recorded))
    views = [v for v in ledger.views.values() if recorded_views.get(v.name) != view_checksum(v)]
    invariants = [
        i
        for i in ledger.invariants.values()
        if recorded_invariants.get(i.name) != invariant_checksum(i)
    ]
    return SchemaChanges(
        tuple(new), tuple(retyped), tuple(views), tuple(invariants), tuple(changed_units)
    )


def apply_declared_schema(engine: Engine, ledger: StreamingLedger) -> int | None:
    """Bring the system of record's tables and views up to `ledger`'s declarations; return the
    version of the generated migration applied now, or `None` if there was nothing to do."""
    with engine.begin() as conn:
        cursor = conn.connection.cursor()
        cursor.execute(_LOCK, {"lock": MIGRATION_LOCK})
        _refuse_other_ledgers(cursor, ledger)
        changes = schema_changes(ledger, *_recorded(cursor, ledger))
        if not changes:
            return None
        cursor.execute(_LAST_VERSION, (ledger.name,))
        version = (cursor.fetchone()[0] or 0) + 1
        try:
            statements = _generate(cursor, ledger, changes)
        except errors.InsufficientPrivilege as error:
            raise MigrationError(
                f"ledger {ledger.name!r} needs a schema change ({changes.description()}) that "
                f"this login may not make ({error.pgerror.strip()}); run `ledger db migrate` "
                "as the database's owner"
            ) from error
        text = "".join(f"{ran};\n" for ran in statements)
        checksum = hashlib.sha256(text.encode("utf-8")).hexdigest()
        cursor.execute(
            _RECORD_MIGRATION, (ledger.name, version, changes.description(), text, checksum)
        )
        _record(cursor, ledger.name, version, changes)
    return version


def check_declared_schema(conn: Connection, ledger: StreamingLedger) -> None:
    """Raise `SchemaMismatch` unless the system of record holds `ledger`'s declared tables as
    declared (a read-only check, for commands that must not change the schema)."""
    cursor = conn.connection.cursor()
    changes = schema_changes(ledger, *_recorded(cursor, ledger))
    if changes.new_tables or changes.retyped_tables:
        raise SchemaMismatch(
            f"ledger {ledger.name!r} is not set up in this database ({changes.description()}); "
            "`ledger run` or `ledger db migrate` creates its tables"
        )


def _recorded(cursor: Any, ledger: StreamingLedger) -> tuple[dict, dict, dict]:
    cursor.execute(_RECORDED_TABLES, (ledger.name,))
    tables = {name: RecordedTable(*rest) for name, *rest in cursor.fetchall()}
    cursor.execute(_RECORDED_VIEWS, (ledger.name,))
    views = dict(cursor.fetchall())
    cursor.execute(_RECORDED_INVARIANTS, (ledger.name,))
    return tables, views, dict(cursor.fetchall())


def _refuse_other_ledgers(cursor: Any, ledger: StreamingLedger) -> None:
    # The logs (events, change log, batches) are shared by everything in one schema, so one
    # schema holds one ledger (`ledger_engine.store.database.ledger_url` gives each its own):
    # another ledger's request ids would be this one's duplicates.
    cursor.execute(_OTHER_LEDGERS, (ledger.name,))
    others = [row[0] for row in cursor.fetchall()]
    if others:
        raise SchemaMismatch(
            f"this schema already holds ledger {others[0]!r}; ledger {ledger.name!r} "
            "needs a schema of its own (connect through its ledger_url)"
        )


def _generate(cursor: Any, ledger: StreamingLedger, changes: SchemaChanges) -> list[str]:
    """Run the statements `changes` need and return their text, as run."""
    statements: list[sql.Composable] = []
    tables_change = bool(changes.new_tables or changes.retyped_tables)
    if tables_change:  # it reads every table, and a table it reads cannot be dropped
        statements.append(identified("schema/drop_view", view=ROWS_VIEW))
    for table in changes.new_tables:
        if not _adopt(cursor, table):
            statements.append(_create_table(table))
        else:
            statements.append(_track_last_changes(table))
    for table, recorded in changes.changed_units:
        if recorded.unit is not None and table.unit is not None:
            _refuse_written_unit(cursor, table, recorded.unit)
    for table, recorded in changes.retyped_tables:
        _refuse_written(cursor, table, recorded)
        statements.append(identified("schema/drop_table", table=table.sql_name))
        statements.append(_create_table(table))
    for view in changes.views:
        statements.append(identified("schema/drop_view", view=view.sql_name))
        # Composed here: the view's query is the application's declared SQL, as it wrote it.
        statements.append(
            sql.SQL(statement("schema/create_view")).format(
                view=sql.Identifier(view.sql_name), query=sql.SQL(view.query)
            )
        )
        statements.append(identified("schema/grant_select", view=view.sql_name))
    if tables_change:
        statements += _rows_view(list(ledger.tables.values()))
    texts = []
    for generated in statements:
        texts.append(generated.as_string(cursor))
        cursor.execute(generated)
    return texts


def _rows_view(tables: list[Table]) -> list[sql.Composable]:
    """The statements creating `ROWS_VIEW` over `tables`, granted to the readers."""
    # Composed here: one part per declared table, its label a literal (DDL takes no
    # parameters), the parts joined by UNION ALL.
    part = sql.SQL(statement("schema/rows_view_part"))
    parts = [
        part.format(name=sql.Literal(table.name), table=sql.Identifier(table.sql_name))
        for table in tables
    ]
    rows = sql.SQL("\nUNION ALL\n").join(parts)
    view = sql.SQL(statement("schema/create_rows_view"))
    return [
        view.format(view=sql.Identifier(ROWS_VIEW), rows=rows),
        identified("schema/grant_select", view=ROWS_VIEW),
    ]


def _create_table(table: Table) -> sql.Composable:
    key_type, value_type = declared_shape(table)
    # Composed here: the column types are fixed type names chosen by the declared types.
    return sql.SQL(statement("schema/create_table")).format(
        table=sql.Identifier(table.sql_name),
        key_type=sql.SQL(key_type),
        value_type=sql.SQL(value_type),
    )


# The columns naming a declared table's rows' last changes (sql/0025_change_links.sql): a table
# adopted without them gets them, filled from the change log.
_LAST_CHANGE = {
    "last_change_batch": "bigint",
    "last_change_position": "integer",
    "last_change_seq": "integer",
}


def _adopt(cursor: Any, table: Table) -> bool:
    """True if a table of the declared shape already exists under `table.sql_name` (created by
    an earlier release's core migrations); raise if one of another shape is in the way."""
    cursor.execute(_COLUMNS, (table.sql_name,))
    columns = dict(cursor.fetchall())
    if not columns:
        return False
    key_type, value_type = declared_shape(table)
    shape = {"key": key_type, "value": value_type}
    if columns not in (shape, {**shape, **_LAST_CHANGE}):
        raise SchemaMismatch(
            f"table {table.name!r} of ledger {table.ledger!r} needs the PostgreSQL table "
            f"{table.sql_name!r} with columns key {key_type} and value {value_type}, and a "
            f"table of that name with columns {columns} is in the way"
        )
    return True


def _track_last_changes(table: Table) -> sql.Composable:
    return sql.SQL(statement("schema/track_last_changes")).format(
        sql_name=sql.Literal(table.sql_name), name=sql.Literal(table.name)
    )


def _refuse_written(cursor: Any, table: Table, recorded: RecordedTable) -> None:
    if _written(cursor, table):
        key_type, value_type = declared_shape(table)
        raise SchemaMismatch(
            f"table {table.name!r} of ledger {table.ledger!r} holds key {recorded.key_type} "
            f"and value {recorded.value_type}, and has been written; the declaration now says "
            f"key {key_type} and value {value_type}, which would lose or reinterpret its "
            "data: declare a new table instead (and move the rows with a stream of events)"
        )


def _refuse_written_unit(cursor: Any, table: Table, recorded: Unit) -> None:
    """Refuse to change the unit of a table that has been written: its integers were
    amounts of `recorded`, and would all read as amounts of another unit."""
    if _written(cursor, table):
        raise SchemaMismatch(
            f"table {table.name!r} of ledger {table.ledger!r} counts in {recorded} and has "
            f"been written; the declaration now says {table.unit}, which would make every "
            f"amount in it read as another: declare {recorded} again, or declare a new table "
            "(and move the rows with a stream of events)"
        )


def _written(cursor: Any, table: Table) -> bool:
    """Whether `table` has rows, or entries in the change log."""
    cursor.execute(identified("schema/has_rows", table=table.sql_name))
    has_rows = cursor.fetchone()[0]
    cursor.execute(_WRITTEN_LOG, (table.name,))
    return bool(has_rows or cursor.fetchone()[0])


def _record(cursor: Any, ledger: str, version: int, changes: SchemaChanges) -> None:
    tables = [
        *changes.new_tables,
        *(t for t, _ in changes.retyped_tables),
        *(t for t, _ in changes.changed_units),
    ]
    for table in tables:
        key_type, value_type = declared_shape(table)
        unit = table.unit
        cursor.execute(
            _RECORD_TABLE,
            (
                ledger,
                table.name,
                table.sql_name,
                key_type,
                value_type,
                unit.code if unit else None,
                unit.precision if unit else None,
                version,
            ),
        )
    for view in changes.views:
        cursor.execute(
            _RECORD_VIEW, (ledger, view.name, view.sql_name, view_checksum(view), version)
        )
    for invariant in changes.invariants:
        cursor.execute(
            _RECORD_INVARIANT,
            (
                ledger,
                invariant.name,
                invariant.sql_name,
                invariant.kind,
                invariant.table,
                invariant.minimum,
                invariant_sources(invariant),
                invariant_checksum(invariant),
                version,
            ),
        )
