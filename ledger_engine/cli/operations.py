"""`ledger db` and `ledger airflow`: running the ledger's database (its URL, migrating its
schema, stopping the embedded server, creating logins) and running Airflow here."""

from __future__ import annotations

import argparse
import os

from ledger_engine.apps import load_ledger
from ledger_engine.cli.output import console
from ledger_engine.cli.parsing import Commands
from ledger_engine.config import Settings
from ledger_engine.errors import LoginError


def cmd_db(settings: Settings, args: argparse.Namespace) -> int:
    """`ledger db url` prints the ledger's URL (its database and schema); `ledger db migrate`
    brings its schema up to date (the core migrations and the ledger's declared tables and
    views); `ledger db stop` stops the embedded server; `ledger db create-login NAME --role
    reader|writer|auditor` creates a login user."""
    # Imported here: the store (SQLAlchemy, psycopg2, pgserver) slows `ledger --help`.
    from ledger_engine.store.database import database_url, ledger_url, libpq_url
    from ledger_engine.store.embedded import stop_embedded

    if args.action == "create-login":
        return _create_login(settings, args)
    if args.action == "migrate":
        return _migrate(settings)
    if args.action == "url":
        # libpq's form, which psql and every PostgreSQL client (SQLAlchemy too) reads.
        url = libpq_url(ledger_url(database_url(settings), load_ledger(settings.app)))
        console.print(url, soft_wrap=True, markup=False)
    elif settings.database_url:
        console.print("LEDGER_DATABASE_URL is set: no embedded server to stop")
    else:
        stopped = stop_embedded(settings.pgdata)
        console.print("stopped" if stopped else "not running")
    return 0


def _migrate(settings: Settings) -> int:
    from ledger_engine.store.database import connect, database_url, ledger_url
    from ledger_engine.store.migrations import migrate
    from ledger_engine.store.schema import apply_declared_schema

    ledger = load_ledger(settings.app)
    engine = connect(ledger_url(database_url(settings), ledger))
    try:
        core = migrate(engine)
        declared = apply_declared_schema(engine, ledger)
    finally:
        engine.dispose()
    console.print(f"core migrations applied now: {', '.join(core) or 'none'}", markup=False)
    generated = f"version {declared}" if declared else "none (up to date)"
    console.print(f"ledger {ledger.name!r}: generated migration {generated}", markup=False)
    return 0


def _create_login(settings: Settings, args: argparse.Namespace) -> int:
    """Create a login in one of the access roles (sql/0007_roles.sql); the password comes from
    LEDGER_NEW_LOGIN_PASSWORD or a prompt, never from the command line, and is never shown."""
    from ledger_engine.store.database import open_store
    from ledger_engine.store.roles import check_login_name, create_login, login_password, login_url

    if not args.name or not args.role:
        console.print("usage: ledger db create-login NAME --role reader|writer|auditor")
        return 2
    try:
        check_login_name(args.name)  # before asking for a password
        password = login_password(os.environ)
        engine = open_store(settings)  # migrated: the roles exist
        try:
            create_login(engine, args.name, args.role, password)
            url = login_url(engine.url.render_as_string(hide_password=False), args.name)
        finally:
            engine.dispose()
    except LoginError as exc:
        console.print(str(exc), style="red", markup=False)
        return 1
    console.print(f"created login {args.name!r} in role {args.role}; connect with:")
    console.print(url, soft_wrap=True, markup=False)
    return 0


def cmd_airflow(settings: Settings, args: argparse.Namespace) -> int:
    """Run Airflow here (scheduler, DAG processor, triggerer, UI on 127.0.0.1) with this
    project's DAGs and settings; print the URL and login; Ctrl-C stops every process it
    started."""
    from ledger_engine.operations.airflow_local import run_airflow

    if args.port is not None:
        settings = settings.with_overrides(airflow_port=args.port)
    return run_airflow(settings, lambda line: console.print(line, markup=False, soft_wrap=True))


# -- the parsers ------------------------------------------------------------------------------


def add_db_parser(commands: Commands) -> None:
    """`ledger db url | migrate | stop | create-login NAME --role ROLE`."""
    db = commands.add_parser("db", help=cmd_db.__doc__)
    db.add_argument("action", choices=["url", "migrate", "stop", "create-login"])
    db.add_argument("name", nargs="?", help="create-login: the new login's name")
    db.add_argument("--role", choices=["reader", "writer", "auditor"], help="create-login")
    db.set_defaults(handler=cmd_db)


def add_airflow_parser(commands: Commands) -> None:
    """`ledger airflow [--port PORT]`."""
    airflow = commands.add_parser("airflow", help=cmd_airflow.__doc__)
    airflow.add_argument(
        "--port", type=int, help="the UI's port (default: LEDGER_AIRFLOW_PORT; 0: a free one)"
    )
    airflow.set_defaults(handler=cmd_airflow)
