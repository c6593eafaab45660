"""Keeping statements from the outside world: each landed file once, every entry accounted for.

`record_file` writes one landed file in one transaction, under a lock per ledger: the first
file of its content (per source) is `loaded` with its entries, rejections and balances; the
same content landed again under another name is a `duplicate` of it, read no further; the same
name and content seen again is `seen` and changes nothing. Before it commits, the loader
counts what the database now holds of the file and compares it with what the parser produced,
so a statement is never half kept (tables: `sql/0017_statements.sql`, `0026`, `0028`).

A file the store cannot take (the parser raising, or PostgreSQL refusing what it read: a NUL
character in a text, say) is kept instead, in a transaction of its own, as one rejection of the
whole file (`UNLOADABLE`) with the reason and its bytes: so whatever one file holds, the run goes
on with the other files and sources, later runs pass over it, and a person can see why. Only a
fault of the store itself (a lost connection, a missing privilege) stops the run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import psycopg2
from psycopg2.extras import execute_values
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from ledger_engine.reconcile.entries import UNLOADABLE, ParsedStatement
from ledger_engine.reconcile.storage.sql_files import statement
from ledger_engine.store.locks import STATEMENTS_LOCK

LOADED, DUPLICATE, SEEN = "loaded", "duplicate", "seen"
REJECTED = "rejected"  # a file loaded with nothing usable in it: no entry, a rejection
# A file that could not be read from its folder: not recorded, it waits for the next run.
UNREADABLE = "unreadable"
_PAGE = 1_000  # rows per INSERT statement
_REASON_LIMIT = 1_000  # characters of the store's reason kept with an unloadable file
# What a fault of the store itself raises, rather than of one file's content: the run stops.
_STORE_FAULTS = (
    DBAPIError,
    psycopg2.OperationalError,
    psycopg2.InterfaceError,
    psycopg2.ProgrammingError,
    psycopg2.InternalError,
    psycopg2.NotSupportedError,
)


@dataclass(frozen=True)
class LandedFile:
    """A statement file as it lies in a source's inbox folder."""

    source: str
    name: str
    raw: bytes
    modified_ns: int

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.raw).hexdigest()


@dataclass(frozen=True)
class FileOutcome:
    """What became of one landed file: `loaded` (its own `file_id`), `duplicate` (the
    `file_id` of the file first loaded with its content), `seen` (nothing new), `rejected`
    (the store could not take it: `reason` says why) or `unreadable` (not read from its
    folder, nothing recorded, `file_id` 0: `reason` says why)."""

    source: str
    file_name: str
    outcome: str
    file_id: int
    entries: int
    rejected: int
    reason: str | None = None


def seen_files(engine: Engine, source: str) -> set[tuple[str, int, int]]:
    """(name, size, modification time in ns) of every file of `source` already landed."""
    with engine.connect() as conn:
        cursor = conn.connection.cursor()
        cursor.execute(statement("statements/seen_files"), (source,))
        return {(name, size, modified) for name, size, modified in cursor.fetchall()}


@dataclass(frozen=True)
class Landing:
    """A file as it landed for a source, for people: `outcome` is `loaded`, `rejected` (nothing
    in it could be read) or `duplicate` (of `first_name`, whose counts these are)."""

    file_name: str
    outcome: str
    first_name: str
    entries: int
    rejected: int
    landed_at: datetime


@dataclass(frozen=True)
class LandingCounts:
    """A source's files by outcome, and the entries its loaded files held."""

    loaded: int
    rejected: int
    duplicate: int
    entries: int
    rejected_entries: int


def landings(engine: Engine, source: str, limit: int) -> list[Landing]:
    """The last `limit` files landed for `source`, newest first."""
    with engine.connect() as conn:
        cursor = conn.connection.cursor()
        cursor.execute(statement("statements/landings"), {"source": source, "limit": limit})
        found = []
        for name, outcome, first, entries, rejected, landed_at in cursor.fetchall():
            if outcome == LOADED and entries == 0 and rejected > 0:
                outcome = REJECTED
            found.append(Landing(name, outcome, first, entries, rejected, landed_at))
        return found


def landing_counts(engine: Engine, source: str) -> LandingCounts:
    """How many of `source`'s files were loaded, rejected or duplicates, and their entries."""
    with engine.connect() as conn:
        cursor = conn.connection.cursor()
        cursor.execute(statement("statements/landing_counts"), {"source": source})
        return LandingCounts(*cursor.fetchone())


def loaded_as(engine: Engine, source: str, sha256: str) -> str | None:
    """The name of `source`'s file first loaded with the content of SHA-256 `sha256`."""
    with engine.connect() as conn:
        cursor = conn.connection.cursor()
        cursor.execute(statement("statements/loaded_as"), (source, sha256))
        found = cursor.fetchone()
        return None if found is None else found[0]


def record_file(
    engine: Engine,
    landed: LandedFile,
    *,
    table: str,
    file_format: str,
    parse: Callable[[bytes], ParsedStatement],
    sources_digest: str,
) -> FileOutcome:
    """Keep `landed` (see the module): `parse` runs only for content not loaded before, and
    its statement is written against the declared `table`; a file the store cannot take is
    kept as rejected whole, with the reason."""
    try:
        return _record_parsed(
            engine,
            landed,
            table=table,
            file_format=file_format,
            parse=parse,
            sources_digest=sources_digest,
        )
    except _STORE_FAULTS:
        raise
    except Exception as refused:  # whatever the file holds: it must not stop the run
        return _record_unloadable(engine, landed, file_format, sources_digest, refused)


def _record_parsed(
    engine: Engine,
    landed: LandedFile,
    *,
    table: str,
    file_format: str,
    parse: Callable[[bytes], ParsedStatement],
    sources_digest: str,
) -> FileOutcome:
    """`record_file` of a file the store takes, in one transaction."""
    digest = landed.sha256
    with engine.begin() as conn:
        cursor = conn.connection.cursor()
        cursor.execute(statement("statements/lock"), (STATEMENTS_LOCK,))
        cursor.execute(statement("statements/find_content"), (landed.source, digest))
        found = cursor.fetchone()
        if found is not None:
            outcome = _land(cursor, landed, digest, found[0], DUPLICATE)
            return FileOutcome(landed.source, landed.name, outcome, found[0], 0, 0)
        parsed = parse(landed.raw)
        cursor.execute(
            statement("statements/insert_file"),
            (
                landed.source,
                landed.name,
                digest,
                file_format,
                parsed.statement_id,
                len(parsed.entries),
                len(parsed.rejections),
                sources_digest,
            ),
        )
        file_id = cursor.fetchone()[0]
        _insert_statement(cursor, file_id, landed.source, table, parsed)
        outcome = _land(cursor, landed, digest, file_id, LOADED)
        assert outcome == LOADED, "a new content's first landing is its load"
        return FileOutcome(
            landed.source, landed.name, LOADED, file_id, len(parsed.entries), len(parsed.rejections)
        )


def unloadable_reason(error: Exception) -> str:
    """What a person reads of why the store could not take a file: the store's own words, on
    one line."""
    said = " ".join(str(error).split()) or type(error).__name__
    if len(said) > _REASON_LIMIT:
        said = said[: _REASON_LIMIT - 1] + "…"
    return f"the store could not keep this file, so nothing of it was loaded: {said}"


def _record_unloadable(
    engine: Engine, landed: LandedFile, file_format: str, sources_digest: str, error: Exception
) -> FileOutcome:
    """Keep `landed`, which the store could not take (`error`), as one rejection of the whole
    file with the reason and its bytes, in a transaction of its own."""
    digest, reason = landed.sha256, unloadable_reason(error)
    with engine.begin() as conn:
        cursor = conn.connection.cursor()
        cursor.execute(statement("statements/lock"), (STATEMENTS_LOCK,))
        cursor.execute(statement("statements/find_content"), (landed.source, digest))
        found = cursor.fetchone()
        if found is not None:  # another loader kept the same content meanwhile
            outcome = _land(cursor, landed, digest, found[0], DUPLICATE)
            return FileOutcome(landed.source, landed.name, outcome, found[0], 0, 0)
        cursor.execute(
            statement("statements/insert_file"),
            (landed.source, landed.name, digest, file_format, None, 0, 1, sources_digest),
        )
        file_id = cursor.fetchone()[0]
        execute_values(
            cursor,
            statement("statements/insert_rejections"),
            [(file_id, 0, UNLOADABLE, reason, landed.raw)],
        )
        outcome = _land(cursor, landed, digest, file_id, LOADED)
        assert outcome == LOADED, "a new content's first landing is its load"
        return FileOutcome(landed.source, landed.name, REJECTED, file_id, 0, 1, reason)


def _land(cursor, landed: LandedFile, digest: str, file_id: int, outcome: str) -> str:
    cursor.execute(
        statement("statements/insert_landing"),
        (
            landed.source,
            landed.name,
            digest,
            len(landed.raw),
            landed.modified_ns,
            file_id,
            outcome,
        ),
    )
    recorded, inserted = cursor.fetchone()
    return recorded if inserted else SEEN


def _insert_statement(
    cursor, file_id: int, source: str, table: str, parsed: ParsedStatement
) -> None:
    entries = [
        (
            file_id,
            e.position,
            source,
            table,
            e.account,
            e.amount,
            e.booking_date,
            e.value_date,
            e.reference,
            e.servicer_reference,
            e.description,
            e.raw,
        )
        for e in parsed.entries
    ]
    rejections = [(file_id, r.position, r.reason, r.detail, r.raw) for r in parsed.rejections]
    balances = [
        (
            file_id,
            b.statement,
            source,
            table,
            b.account,
            b.opening,
            b.closing,
            b.stated_text,
            b.as_of,
        )
        for b in parsed.balances
    ]
    for name, rows in (
        ("insert_entries", entries),
        ("insert_rejections", rejections),
        ("insert_balances", balances),
    ):
        if rows:
            execute_values(cursor, statement(f"statements/{name}"), rows, page_size=_PAGE)
    # The pair of the parser's own check: what the database holds is what was parsed.
    cursor.execute(statement("statements/file_counts"), {"file_id": file_id})
    held = cursor.fetchone()
    if held != (len(entries), len(rejections)):
        raise AssertionError(
            f"statement file {file_id}: the database holds {held[0]} entries and {held[1]} "
            f"rejections, the parser gave {len(entries)} and {len(rejections)}"
        )
