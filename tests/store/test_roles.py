"""Access control in PostgreSQL (sql/0007_roles.sql): the engine's writer does its work and no
more, the reader sees the three views and nothing else, the auditor reads everything and
writes nothing.

Tables and views are enumerated from the catalog, not listed by hand, so that a table a later
migration adds without the right grants makes these tests fail.
"""

from __future__ import annotations

import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg2
import pytest
from psycopg2 import errorcodes, sql
from sqlalchemy import Engine, create_engine, make_url, text

from ledger_engine.apps.bank.generator import generate_events
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.cli import main
from ledger_engine.core.ingest import event_to_line
from ledger_engine.core.records import Event
from ledger_engine.errors import LoginError
from ledger_engine.reconcile.matching.reference import match
from ledger_engine.reconcile.run import reconcile
from ledger_engine.reconcile.sources import Sources
from ledger_engine.reconcile.statement_inbox import land_statement
from ledger_engine.runtime.serial import run_serial
from ledger_engine.store.database import connect, libpq_url
from ledger_engine.store.migrations import SQL_DIR, migrate, migrations
from ledger_engine.store.roles import (
    PASSWORD_VARIABLE,
    check_login_name,
    create_login,
    login_password,
    login_url,
)
from tests.support.database import rows
from tests.support.logins import Logins
from tests.support.recon_history import keyed_source
from tests.support.serial_commit import SerialCommits

VIEWS_FOR_READERS = ("reconciled_balances", "account_statements", "request_outcomes", "ledger_rows")
# Reconciliation's views for readers (sql/0019), empty until statements are reconciled.
RECONCILIATION_VIEWS = ("statement_drift", "open_breaks")
GROUP_ROLES = ("ledger_writer", "ledger_reader", "ledger_auditor")
# The log: the writer appends to it and never changes what is there.
APPEND_ONLY = (
    "ledger_batches",
    "ledger_events",
    "ledger_change_log",
    "ledger_results",
    "ledger_rejections",
    "ledger_duplicates",
    "ledger_requests",
    # What statements from the outside world said is evidence too (sql/0017).
    "ledger_statement_files",
    "ledger_statement_landings",
    "ledger_statement_entries",
    "ledger_statement_rejections",
    "ledger_statement_balances",
    # So are reconciliation's decisions (sql/0019): a break changes only its resolution.
    "ledger_recon_runs",
    "ledger_recon_matches",
    "ledger_recon_matched_entries",
    "ledger_recon_matched_changes",
    "ledger_recon_breaks",
    "ledger_recon_break_history",
)
INSUFFICIENT_PRIVILEGE = errorcodes.INSUFFICIENT_PRIVILEGE
# Creating objects that would outlive the session: only migrations do that.
SCHEMA_CHANGES = (
    "CREATE TABLE intruder (a int)",
    "CREATE VIEW intruder AS SELECT 1",
    "CREATE SCHEMA intruder",
    "CREATE FUNCTION intruder() RETURNS int LANGUAGE sql AS 'SELECT 1'",
)


@pytest.fixture
def logins(database_url: str) -> Iterator[Logins]:
    """Login users in the test's database; dropped from the server afterwards."""
    made = Logins(database_url)
    yield made
    made.drop_all()


# -- helpers -----------------------------------------------------------------------------


def relations(engine: Engine, kinds: str) -> list[tuple[str, str | None]]:
    """(name, first column or None) of every relation of the given `relkind`s in the
    ledger's schema: r table, p partitioned table, v view, m materialized view, S sequence."""
    with engine.connect() as conn:
        found = conn.execute(
            text(
                "SELECT c.relname, (SELECT a.attname FROM pg_attribute a"
                " WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped"
                " ORDER BY a.attnum LIMIT 1)"
                " FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace"
                " AND c.relkind = ANY(:kinds) ORDER BY c.relname"
            ),
            {"kinds": list(kinds)},
        )
        return [tuple(row) for row in found]


def tables(engine: Engine) -> list[tuple[str, str | None]]:
    return relations(engine, "rp")


def views(engine: Engine) -> list[tuple[str, str | None]]:
    return relations(engine, "vm")


def error_of(conn: psycopg2.extensions.connection, statement: sql.Composable) -> str | None:
    """The SQLSTATE `statement` fails with, or None if it ran; rolled back either way."""
    try:
        with conn.cursor() as cursor:
            cursor.execute(statement)
    except psycopg2.Error as exc:
        return exc.pgcode
    finally:
        conn.rollback()
    return None


def writes(name: str, column: str | None) -> list[sql.Composed]:
    """Every kind of write to a relation (INSERT, UPDATE if it has a column, DELETE,
    TRUNCATE); only a missing privilege (or the relation's kind) can make them fail."""
    rel = sql.Identifier(name)
    update = []
    if column is not None:
        col = sql.Identifier(column)
        update = [sql.SQL("UPDATE {} SET {} = {} WHERE false").format(rel, col, col)]
    return [
        sql.SQL("INSERT INTO {} DEFAULT VALUES").format(rel),
        *update,
        sql.SQL("DELETE FROM {} WHERE false").format(rel),
        sql.SQL("TRUNCATE {}").format(rel),
    ]


def select(name: str) -> sql.Composed:
    return sql.SQL("SELECT * FROM {} LIMIT 1").format(sql.Identifier(name))


def write_privileges(engine: Engine, role: str, name: str) -> list[str]:
    """The write privileges `role` holds on relation `name`."""
    with engine.connect() as conn:
        return [
            privilege
            for privilege in ("INSERT", "UPDATE", "DELETE", "TRUNCATE")
            if conn.execute(
                text("SELECT has_table_privilege(:role, CAST(:name AS regclass), :privilege)"),
                {"role": role, "name": name, "privilege": privilege},
            ).scalar()
        ]


def event_file(events: list[Event], name: str) -> list[tuple[str, bytes]]:
    return [(name, ("\n".join(event_to_line(e) for e in events) + "\n").encode())]


def fetch(engine: Engine, statement: sql.Composable) -> list[tuple]:
    with engine.connect() as conn, conn.connection.cursor() as cursor:
        cursor.execute(statement)
        return cursor.fetchall()


# -- the roles -----------------------------------------------------------------------------


def test_the_roles_are_groups_without_login_or_special_powers(engine: Engine) -> None:
    with engine.connect() as conn:
        found = conn.execute(
            text(
                "SELECT rolname, rolcanlogin, rolsuper, rolcreaterole, rolcreatedb,"
                " rolreplication, rolbypassrls FROM pg_roles WHERE rolname = ANY(:names)"
                " ORDER BY rolname"
            ),
            {"names": list(GROUP_ROLES)},
        ).all()
    assert found == [
        (name, False, False, False, False, False, False) for name in sorted(GROUP_ROLES)
    ]


def test_tables_of_later_migrations_get_the_writer_and_auditor_grants(engine: Engine) -> None:
    """What a later migration creates (as the same migrating user) is writable by the engine
    and readable by the auditor without a grant of its own; the reader gets nothing."""
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE later_state (key text PRIMARY KEY, value bigint)"))
    with engine.connect() as conn:
        granted = {
            (role, privilege): conn.execute(
                text("SELECT has_table_privilege(:role, 'later_state', :privilege)"),
                {"role": role, "privilege": privilege},
            ).scalar()
            for role in GROUP_ROLES
            for privilege in ("SELECT", "INSERT", "UPDATE", "DELETE")
        }
    assert [key for key, held in granted.items() if held] == [
        ("ledger_writer", "SELECT"),
        ("ledger_writer", "INSERT"),
        ("ledger_writer", "UPDATE"),
        ("ledger_writer", "DELETE"),
        ("ledger_auditor", "SELECT"),
    ]


@pytest.fixture
def renamed_roles(
    pg_server_url: str, tmp_path: Path
) -> Iterator[tuple[Path, list[str], list[str]]]:
    """A copy of sql/ that names the roles afresh (so that they do not exist yet, as on a
    new server), and two empty databases: (sql folder, database URLs, role names). All
    dropped afterwards."""
    suffix = uuid.uuid4().hex[:8]
    sql_dir = tmp_path / "sql"
    shutil.copytree(SQL_DIR, sql_dir)
    for path in sql_dir.glob("*.sql"):
        content = path.read_text()
        for role in GROUP_ROLES:
            content = content.replace(role, f"{role}_{suffix}")
        path.write_text(content)
    databases = [f"ledger_test_race_{suffix}_{n}" for n in (1, 2)]
    admin = create_engine(pg_server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        for name in databases:
            conn.connection.cursor().execute(
                sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
            )
    urls = [
        make_url(pg_server_url).set(database=name).render_as_string(hide_password=False)
        for name in databases
    ]
    yield sql_dir, urls, [f"{role}_{suffix}" for role in GROUP_ROLES]
    with admin.connect() as conn:
        cursor = conn.connection.cursor()
        for name in databases:
            cursor.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
        for role in GROUP_ROLES:
            cursor.execute(
                sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(f"{role}_{suffix}"))
            )
    admin.dispose()


def test_two_databases_migrated_at_once_both_get_the_roles(renamed_roles) -> None:
    """Roles belong to the server, migrations to one database each: while one migration has
    created the roles but not committed, another database's migration waits for it and then
    goes on with the roles it made, instead of failing."""
    sql_dir, (first_url, second_url), roles = renamed_roles
    first = psycopg2.connect(libpq_url(first_url))
    try:
        with first.cursor() as cursor:  # migrate() as far as its COMMIT
            cursor.execute(
                "CREATE TABLE ledger_schema_migrations (version text PRIMARY KEY,"
                " name text NOT NULL, checksum text NOT NULL)"
            )
            for migration in migrations(sql_dir):
                cursor.execute(migration.sql)
        outcome: list[object] = []
        second_engine = connect(second_url)
        second = threading.Thread(
            target=lambda: outcome.append(_migrate_or_error(second_engine, sql_dir))
        )
        second.start()
        waited = _wait_until_blocked(first_url, first.get_backend_pid(), second)
        first.commit()
        second.join(timeout=120)
        second_engine.dispose()
    finally:
        first.close()

    assert waited, "the second migration never waited for the first one's roles"
    assert outcome == [[m.version for m in migrations(sql_dir)]]
    for url in (first_url, second_url):
        engine = connect(url)
        assert write_privileges(engine, roles[0], "ledger_merkle_buckets") == ["INSERT", "DELETE"]
        engine.dispose()


def _migrate_or_error(engine: Engine, sql_dir: Path) -> object:
    try:
        return migrate(engine, sql_dir)
    except Exception as exc:  # reported to the test, which shows it
        return exc


def _wait_until_blocked(admin_url: str, blocker: int, thread: threading.Thread) -> bool:
    """True once some session waits for the transaction of backend `blocker`; False if
    `thread` ended first."""
    probe = connect(admin_url)
    try:
        while thread.is_alive():
            with probe.connect() as conn:
                blocked = conn.execute(
                    text(
                        "SELECT count(*) FROM pg_stat_activity"
                        " WHERE CAST(:blocker AS integer) = ANY(pg_blocking_pids(pid))"
                    ),
                    {"blocker": blocker},
                ).scalar()
            if blocked:
                return True
            time.sleep(0.05)
        return False
    finally:
        probe.dispose()


# -- the reader ----------------------------------------------------------------------------


def test_the_reader_reads_each_view_and_sees_the_ledger(
    engine: Engine, logins: Logins, commit_files
) -> None:
    events = generate_events(40, accounts=8, seed=11, bad_fraction=0.1, duplicate_fraction=0.1)
    commit_files(engine, 0, event_file(events, "events-000001.jsonl"))
    reader = logins.create("reader")
    for view in VIEWS_FOR_READERS:
        query = sql.SQL("SELECT * FROM {} ORDER BY 1, 2, 3").format(sql.Identifier(view))
        seen = fetch(reader.engine, query)
        assert seen, f"{view} is empty"
        assert seen == fetch(engine, query)


def test_the_reader_reads_the_reconciliation_views(engine: Engine, logins: Logins) -> None:
    reader = logins.create("reader").connect()
    refused = {name: error_of(reader, select(name)) for name in RECONCILIATION_VIEWS}
    reader.close()
    assert refused == dict.fromkeys(RECONCILIATION_VIEWS)


def test_the_reader_cannot_read_any_table_or_other_view(engine: Engine, logins: Logins) -> None:
    reader = logins.create("reader").connect()
    shown = {*VIEWS_FOR_READERS, *RECONCILIATION_VIEWS}
    hidden = [name for name, _ in relations(engine, "rpvmS") if name not in shown]
    assert {"accounts", "asset_ledger", *APPEND_ONLY, "ledger_schema_migrations"} <= set(hidden)
    readable = [name for name in hidden if error_of(reader, select(name)) != INSUFFICIENT_PRIVILEGE]
    reader.close()
    assert readable == []


# -- the reader and the auditor write nothing ----------------------------------------------


@pytest.mark.parametrize("kind", ["reader", "auditor"])
def test_a_read_only_login_cannot_write_any_table_or_view(
    engine: Engine, logins: Logins, kind: str
) -> None:
    login = logins.create(kind)
    conn = login.connect()
    table_writes_not_refused = [
        (name, statement.as_string(conn))
        for name, column in tables(engine)
        for statement in writes(name, column)
        if error_of(conn, statement) != INSUFFICIENT_PRIVILEGE
    ]
    # A view may refuse a write for being a view before its privileges are looked at, so
    # for views the privileges are checked as well.
    view_writes_run = [
        (name, statement.as_string(conn))
        for name, column in views(engine)
        for statement in writes(name, column)
        if error_of(conn, statement) is None
    ]
    view_privileges = {
        name: write_privileges(engine, login.name, name)
        for name, _ in views(engine)
        if write_privileges(engine, login.name, name)
    }
    conn.close()
    assert {"accounts", *APPEND_ONLY} <= {name for name, _ in tables(engine)}
    assert table_writes_not_refused == []
    assert view_writes_run == []
    assert view_privileges == {}


@pytest.mark.parametrize("kind", ["reader", "auditor"])
def test_a_read_only_login_cannot_create_anything(logins: Logins, kind: str) -> None:
    conn = logins.create(kind).connect()
    outcomes = {
        statement: error_of(conn, sql.SQL(statement))
        for statement in (*SCHEMA_CHANGES, "CREATE TEMPORARY TABLE intruder (a int)")
    }
    conn.close()
    assert outcomes == dict.fromkeys(outcomes, INSUFFICIENT_PRIVILEGE)


# -- the auditor ---------------------------------------------------------------------------


def test_the_auditor_reads_every_table_view_and_sequence(engine: Engine, logins: Logins) -> None:
    auditor = logins.create("auditor").connect()
    everything = [name for name, _ in relations(engine, "rpvmS")]
    assert {"accounts", "asset_ledger", *APPEND_ONLY, *VIEWS_FOR_READERS} <= set(everything)
    refused = [name for name in everything if error_of(auditor, select(name)) is not None]
    auditor.close()
    assert refused == []


# -- the writer ----------------------------------------------------------------------------


def test_the_writer_commits_batches_equal_to_the_serial_runner(
    database_url: str, logins: Logins, commit_files
) -> None:
    """A login in the writer role, not a superuser, runs micro-batches end to end: Spark
    tasks read known request ids and rows and stage rows for later rounds by COPY, the commit
    locks, writes the journal by COPY, builds its temporary table, applies and updates the
    Merkle digests."""
    writer = logins.create("writer")
    assert rows(writer.engine, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user") == [
        (False,)
    ]
    events = generate_events(80, accounts=10, seed=5, bad_fraction=0.05, duplicate_fraction=0.05)
    first = commit_files(writer.engine, 0, event_file(events[:50], "events-000001.jsonl"))
    second = commit_files(writer.engine, 1, event_file(events[50:], "events-000002.jsonl"))

    expected = run_serial(build_ledger(), events)
    assert first.committed and second.committed
    assert (
        dict(rows(writer.engine, "SELECT key, value FROM accounts")) == (expected.state["accounts"])
    )
    assert (
        dict(rows(writer.engine, "SELECT key, value FROM asset_ledger"))
        == (expected.state["asset_ledger"])
    )
    assert rows(writer.engine, "SELECT outcome FROM ledger_events ORDER BY batch_id, position") == [
        (o.status,) for o in expected.outcomes
    ]
    assert rows(writer.engine, "SELECT count(*) FROM ledger_change_log") == [
        (len(expected.changes),)
    ]


def test_the_writer_reconciles_and_may_change_only_the_run_that_read_an_account(
    logins: Logins, tmp_path: Path
) -> None:
    """A writer login runs reconciliation: an account appearing is recorded with the run that
    read it from the start (sql/0024), which a later start's run may replace; the account
    itself is not to be rewritten."""
    writer = logins.create("writer")
    bob = Event(
        "deposits",
        "b0",
        {
            "account_id": "bob",
            "asset_id": "cash",
            "amount": 700,
            "asset_amount": 1,
            "reference": "B-0",
            "value_date": "2026-11-02",
        },
    )
    SerialCommits(writer.engine, build_ledger()).commit(
        [("0.jsonl", (event_to_line(bob) + "\n").encode())]
    )
    source = keyed_source()
    sources = Sources({source.name: source}, digest="w" * 64)
    reconcile(writer.engine, sources, tmp_path, match, who="writer")  # an empty inbox
    land_statement(tmp_path, source, "1.csv", b"Date,Amount,Ref,Acct\n2026-11-02,7.00,B-0,bob\n")

    (part,) = reconcile(writer.engine, sources, tmp_path, match, who="writer").sources

    assert len(part.outcome.matches) == 1
    assert rows(writer.engine, "SELECT account, run_id FROM ledger_recon_accounts") == [("bob", 2)]
    conn = writer.connect()
    rewrite = sql.SQL("UPDATE ledger_recon_accounts SET account = 'carol'")
    assert error_of(conn, rewrite) == INSUFFICIENT_PRIVILEGE
    assert error_of(conn, sql.SQL("UPDATE ledger_recon_accounts SET run_id = 1")) is None
    conn.close()


def test_the_writer_cannot_change_the_log(engine: Engine, logins: Logins) -> None:
    conn = logins.create("writer").connect()
    columns = dict(tables(engine))
    outcomes = {
        statement.as_string(conn): error_of(conn, statement)
        for table in APPEND_ONLY
        for statement in writes(table, columns[table])
        if not statement.as_string(conn).startswith("INSERT")  # appending is its job
    }
    conn.close()
    assert len(outcomes) == 3 * len(APPEND_ONLY)  # UPDATE, DELETE, TRUNCATE of each
    assert outcomes == dict.fromkeys(outcomes, INSUFFICIENT_PRIVILEGE)


def test_the_writer_cannot_change_the_schema(logins: Logins) -> None:
    conn = logins.create("writer").connect()
    outcomes = {
        statement: error_of(conn, sql.SQL(statement))
        for statement in (
            *SCHEMA_CHANGES,
            "DROP TABLE accounts",
            "ALTER TABLE accounts ADD COLUMN note text",
            "DROP VIEW reconciled_balances",
            "INSERT INTO ledger_schema_migrations VALUES ('9999', 'x', 'x')",
        )
    }
    conn.close()
    assert outcomes == dict.fromkeys(outcomes, INSUFFICIENT_PRIVILEGE)


# -- creating logins -----------------------------------------------------------------------


def test_a_login_is_a_member_of_its_role_with_a_hashed_password(
    engine: Engine, logins: Logins
) -> None:
    login = logins.create("auditor")
    with engine.connect() as conn:
        member_of = conn.execute(
            text(
                "SELECT r.rolname FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.roleid"
                " JOIN pg_roles u ON u.oid = m.member WHERE u.rolname = :name"
            ),
            {"name": login.name},
        ).all()
        stored = conn.execute(
            text("SELECT rolpassword FROM pg_authid WHERE rolname = :name"), {"name": login.name}
        ).scalar()
    assert member_of == [("ledger_auditor",)]
    password = make_url(login.url).password
    assert stored.startswith(("SCRAM-SHA-256$", "md5"))
    assert password not in stored


@pytest.mark.parametrize(
    "name",
    ["", "Upper", "1st", "has-dash", "has space", "x" * 64, "pg_reserved", "ledger_reader"],
)
def test_a_login_name_must_be_a_plain_identifier(name: str) -> None:
    with pytest.raises(LoginError):
        check_login_name(name)


def test_a_taken_login_name_or_unknown_role_is_a_clear_error(
    engine: Engine, logins: Logins
) -> None:
    taken = logins.create("reader").name
    with pytest.raises(LoginError, match="already exists"):
        create_login(engine, taken, "reader", "secret")
    with pytest.raises(LoginError, match="unknown role"):
        create_login(engine, "ledger_test_nobody", "admin", "secret")
    with pytest.raises(LoginError, match="empty"):
        create_login(engine, "ledger_test_nobody", "reader", "")


def test_the_password_comes_from_the_environment_or_a_prompt_asked_twice() -> None:
    assert login_password({PASSWORD_VARIABLE: "from env"}, prompt=_no_prompt) == "from env"
    answers = iter(["typed", "typed"])
    assert login_password({}, prompt=lambda _: next(answers)) == "typed"
    answers = iter(["typed", "mistyped"])
    with pytest.raises(LoginError, match="differ"):
        login_password({}, prompt=lambda _: next(answers))
    with pytest.raises(LoginError, match="empty"):
        login_password({PASSWORD_VARIABLE: ""}, prompt=_no_prompt)


def _no_prompt(_: str) -> str:
    raise AssertionError("prompted although the environment has the password")


@pytest.mark.parametrize(
    ("admin_url", "expected"),
    [
        (
            "postgresql+psycopg2://admin:secret@db.example:5432/ledger",
            "postgresql+psycopg2://alice@db.example:5432/ledger",
        ),
        (  # the embedded server's shape: an empty password, a Unix socket folder
            "postgresql+psycopg2://postgres:@/ledger?host=/tmp/pg",
            "postgresql+psycopg2://alice@/ledger?host=%2Ftmp%2Fpg",
        ),
    ],
)
def test_a_login_url_names_the_login_and_carries_no_password(admin_url: str, expected: str) -> None:
    assert login_url(admin_url, "alice") == expected


def test_ledger_db_create_login_prints_the_url_without_the_password(
    database_url: str, logins: Logins, monkeypatch, capsys, tmp_path: Path
) -> None:
    name = f"ledger_test_cli_{uuid.uuid4().hex[:10]}"
    logins.track(name)
    monkeypatch.setenv("LEDGER_DATABASE_URL", database_url)
    monkeypatch.setenv("LEDGER_DATA_DIR", str(tmp_path))
    monkeypatch.setenv(PASSWORD_VARIABLE, "s3cret-Password")

    assert main(["db", "create-login", name, "--role", "reader"]) == 0

    printed = capsys.readouterr().out
    assert "s3cret-Password" not in printed
    url = next(line for line in printed.split() if "://" in line)
    assert make_url(url).username == name and make_url(url).password is None
    reader = connect(
        make_url(url).set(password="s3cret-Password").render_as_string(hide_password=False)
    )
    assert rows(reader, "SELECT count(*) FROM reconciled_balances") == [(0,)]
    reader.dispose()


def test_the_writer_opens_an_up_to_date_store_without_needing_ddl(logins: Logins) -> None:
    """`ledger run` as the writer: opening the store applies no migration and creates
    nothing, which the writer may not do."""
    writer = logins.create("writer")
    assert migrate(writer.engine) == []


def test_the_reader_looks_up_balances_and_requests_with_the_ledger_command(
    logins: Logins, commit_files, engine: Engine, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    events = generate_events(30, accounts=5, seed=9, bad_fraction=0.0, duplicate_fraction=0.0)
    commit_files(engine, 0, event_file(events, "events-000001.jsonl"))
    reader = logins.create("reader")
    monkeypatch.setenv("LEDGER_DATABASE_URL", reader.url)
    account = events[0].payload["account_id"]

    assert main(["balance", account]) == 0
    assert main(["request", events[0].request_id]) == 0
    assert main(["request", "no-such-request"]) == 1
    printed = capsys.readouterr().out
    assert f"{account}: " in printed and "applied" in printed
