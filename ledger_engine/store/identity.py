"""Which database and ledger a connection reaches: the identity of a ledger's schema.

The id is a random UUID written once into the ledger's schema when it is migrated
(`sql/0023_ledger_identity.sql`): a new database, or the same name created again after a
DROP, gets another, where a database's name or PostgreSQL's system identifier (one for every
database of a cluster) would not tell them apart. The name and the server are kept beside it
for people: they say where the ledger is, and may change (a rename, a move) under the same id.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import Engine

from ledger_engine.store.sql_files import statement

_READ = statement("identity/read")


@dataclass(frozen=True)
class LedgerIdentity:
    """One ledger's schema in one database."""

    database_id: str  # the schema's UUID
    schema: str
    database: str  # for people: the database's name and server as last seen
    server: str

    @property
    def key(self) -> str:
        """A file name that stands for this ledger in this database: schema and id."""
        return f"{self.schema}-{self.database_id}"

    def describe(self) -> str:
        """The ledger's schema, its database and server, and its id, for a person."""
        return (
            f"ledger schema {self.schema!r} in database {self.database!r} on {self.server}"
            f" (id {self.database_id})"
        )

    def same_ledger(self, other: LedgerIdentity) -> bool:
        """Whether `other` is this ledger of this database (names and servers aside)."""
        return (self.database_id, self.schema) == (other.database_id, other.schema)

    def to_json(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LedgerIdentity:
        return cls(**{name: str(data[name]) for name in cls.__dataclass_fields__})


def ledger_identity(engine: Engine) -> LedgerIdentity:
    """The identity of the ledger schema `engine`'s sessions reach (its `search_path`); the
    schema must be migrated."""
    with engine.connect() as conn:
        cursor = conn.connection.cursor()
        cursor.execute(_READ)
        rows = cursor.fetchall()
    assert len(rows) == 1, f"ledger_identity holds {len(rows)} rows, not one"
    database_id, database, schema = rows[0]
    return LedgerIdentity(database_id, schema, database, _server(engine))


def _server(engine: Engine) -> str:
    """`host:port`, or the socket folder of a server reached through one (the embedded)."""
    url = engine.url
    host = url.host or url.query.get("host") or "localhost"
    if isinstance(host, tuple):
        host = ",".join(host)
    return f"{host}:{url.port}" if url.port else str(host)
