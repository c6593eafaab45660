"""Throwaway login users for tests, each in one of the access roles of sql/0007_roles.sql.

Logins belong to the whole server, not to a test's database, so they are dropped again at the
end of the test (`Logins.drop_all`, called by the fixtures that use this): first what they
own or were granted in the test's database (`DROP OWNED BY`), then the role.
"""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass

import psycopg2
from psycopg2 import sql
from sqlalchemy import Engine, create_engine, make_url

from ledger_engine.store.database import connect, libpq_url
from ledger_engine.store.roles import create_login


@dataclass(frozen=True)
class Login:
    name: str
    kind: str
    url: str  # SQLAlchemy URL of the test's database as this login, password included
    engine: Engine

    def connect(self) -> psycopg2.extensions.connection:
        """A plain psycopg2 connection as this login (not autocommit)."""
        return psycopg2.connect(libpq_url(self.url))


class Logins:
    """Creates logins on the server of `admin_url` (a superuser's URL of the test's database)
    and remembers them for `drop_all`."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url
        self._admin = connect(admin_url)
        self._names: list[str] = []
        self._engines: list[Engine] = []

    def create(self, kind: str) -> Login:
        """A new login in the role of `kind` (reader, writer, auditor), with a random name and
        password; the URL carries the password (the test servers trust local connections,
        a server that checks passwords gets the right one)."""
        name = f"ledger_test_{kind}_{uuid.uuid4().hex[:10]}"
        password = secrets.token_urlsafe(16)
        self.track(name)
        create_login(self._admin, name, kind, password)
        url = (
            make_url(self.admin_url)
            .set(username=name, password=password)
            .render_as_string(hide_password=False)
        )
        engine = connect(url)
        self._engines.append(engine)
        return Login(name, kind, url, engine)

    def track(self, name: str) -> None:
        """Drop the role `name` (made elsewhere, e.g. by the CLI) with the others."""
        self._names.append(name)

    def drop_all(self) -> None:
        for engine in self._engines:
            engine.dispose()
        admin = create_engine(self.admin_url, isolation_level="AUTOCOMMIT")
        try:
            with admin.connect() as conn:
                cursor = conn.connection.cursor()
                for name in self._names:
                    cursor.execute(
                        "SELECT 1 FROM pg_roles WHERE rolname = %s",
                        (name,),
                    )
                    if cursor.fetchone() is None:
                        continue  # never created (the test failed before)
                    role = sql.Identifier(name)
                    cursor.execute(sql.SQL("DROP OWNED BY {}").format(role))
                    cursor.execute(sql.SQL("DROP ROLE {}").format(role))
        finally:
            admin.dispose()
            self._admin.dispose()
