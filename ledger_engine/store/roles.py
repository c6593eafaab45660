"""Login users of the system of record, each a member of one of its access roles.

The roles themselves, and what each may do, are created by `sql/0007_roles.sql`:

- `writer` (`ledger_writer`): what the engine runs, nothing more;
- `reader` (`ledger_reader`): the views `reconciled_balances`, `account_statements` and
  `request_outcomes`, nothing else;
- `auditor` (`ledger_auditor`): reads every table and view, writes nothing.

A login's password comes from the environment (`LEDGER_NEW_LOGIN_PASSWORD`) or a prompt, never
from the command line. It is hashed on the client (SCRAM or MD5, whichever the server asks
for), so the plain password is neither sent to the server nor written to its statement log.
"""

from __future__ import annotations

import getpass
import re
from collections.abc import Callable, Mapping

import psycopg2.errors
from psycopg2.extensions import encrypt_password
from sqlalchemy import URL, Engine, make_url

from ledger_engine.errors import LoginError
from ledger_engine.store.sql_files import identified

# The role a login of each kind becomes a member of (created by sql/0007_roles.sql).
ROLES: dict[str, str] = {
    "reader": "ledger_reader",
    "writer": "ledger_writer",
    "auditor": "ledger_auditor",
}
PASSWORD_VARIABLE = "LEDGER_NEW_LOGIN_PASSWORD"

# Lower-case identifiers that psql and URLs take unquoted; PostgreSQL would silently cut a
# longer name to 63 bytes, creating a user other than the one asked for.
_LOGIN_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def check_login_name(name: str) -> str:
    """`name` if it can name a login: lower-case letters, digits and `_`, at most 63, not
    starting with a digit, not `pg_...` (reserved by PostgreSQL) and not one of the roles."""
    if not _LOGIN_NAME.fullmatch(name):
        raise LoginError(
            f"login name {name!r} must be 1 to 63 lower-case letters, digits or '_', "
            "not starting with a digit"
        )
    if name.startswith("pg_") or name in ROLES.values():
        raise LoginError(f"login name {name!r} is reserved")
    return name


def login_password(
    environ: Mapping[str, str], prompt: Callable[[str], str] = getpass.getpass
) -> str:
    """The new login's password: `LEDGER_NEW_LOGIN_PASSWORD` if set, else asked twice."""
    password = environ.get(PASSWORD_VARIABLE)
    if password is None:
        password = prompt("password of the new login: ")
        if prompt("the same password again: ") != password:
            raise LoginError("the two passwords differ")
    if not password:
        raise LoginError("the password is empty")
    return password


def create_login(engine: Engine, name: str, kind: str, password: str) -> None:
    """Create the login user `name`, a member of the role of `kind` (see `ROLES`).

    Needs a connection allowed to create roles (a superuser, or CREATEROLE with ADMIN on the
    role). Logins belong to the whole server; the role's rights are per database, granted
    where the migrations ran.
    """
    check_login_name(name)
    if kind not in ROLES:
        raise LoginError(f"unknown role {kind!r}; choose one of {', '.join(ROLES)}")
    if not password:
        raise LoginError("the password is empty")
    conn = engine.raw_connection()
    try:
        hashed = encrypt_password(password, name, conn.dbapi_connection)
        create = identified("roles/create_login", login=name, role=ROLES[kind])
        with conn.cursor() as cursor:
            cursor.execute(create, {"password": hashed})
        conn.commit()
    except psycopg2.errors.DuplicateObject as exc:
        raise LoginError(f"a role named {name!r} already exists") from exc
    finally:
        conn.close()


def login_url(url: str, name: str) -> str:
    """`url` with `name` as its user and no password: what to give the new login's owner."""
    given = make_url(url)
    # Built afresh: `URL.set` leaves a field alone when given None, so it cannot drop one.
    bare = URL.create(
        given.drivername,
        username=name,
        host=given.host,
        port=given.port,
        database=given.database,
        query=given.query,
    )
    return bare.render_as_string(hide_password=False)
