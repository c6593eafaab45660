"""Names people choose, and the SQL identifiers the platform derives from them.

A ledger, table or stream name is a label: any non-empty text that PostgreSQL can store
(`"simple example"`, `"Asset Ledger"`, `"O'Brien's book"`). It is kept as data wherever the
platform records it (the change log's `table_name`, an event's `stream`). Where PostgreSQL needs
an identifier (a table for a declared table's rows), `sql_identifier` derives one:

- a label that already is a plain identifier (lower-case ASCII letter, then letters, digits or
  `_`, at most `PLAIN_MAX` characters, not in the platform's own namespaces `ledger_` and `pg_`)
  is its own identifier, so that `accounts` is the table `accounts` people expect to query;
- any other label becomes a readable slug of its ASCII letters and digits followed by `_` and 12
  hex digits of the SHA-256 of the exact label: `"Asset Ledger"` -> `asset_ledger_5b2f...`.

The result is stable (a function of the label alone, the same on every machine and in every
release: migrations record it, so it must never change), at most 63 bytes (PostgreSQL's limit)
and never one of the platform's own names. Two labels could only meet on one identifier if
SHA-256 collided in 48 bits, or a plain label happened to look like a slug with a hash; the
declarations check that the identifiers of a ledger's tables are distinct all the same.
"""

from __future__ import annotations

import hashlib
import re

from ledger_engine.core.storable import MAX_ID_BYTES, storable_text

PLAIN_MAX = 40
# The platform's own tables, views and functions start with `ledger_`; PostgreSQL's with `pg_`.
RESERVED_PREFIXES = ("ledger_", "pg_")
_PLAIN = re.compile(rf"[a-z][a-z0-9_]{{0,{PLAIN_MAX - 1}}}")
_IDENTIFIER = re.compile(r"[a-z][a-z0-9_]{0,62}")
_NOT_SLUG = re.compile(r"[^a-z0-9]+")
_HASH_DIGITS = 12
_SLUG_MAX = 63 - 1 - _HASH_DIGITS


def label_problem(kind: str, label: object) -> str | None:
    """Why `label` cannot name a `kind` (ledger, table, stream), or `None` if it can."""
    if not isinstance(label, str):
        return f"{kind} name must be text, not {type(label).__name__}"
    if not label:
        return f"{kind} name must not be empty"
    if not storable_text(label):
        return f"{kind} name {label!r} holds a NUL or an unpaired surrogate"
    if len(label.encode("utf-8")) > MAX_ID_BYTES:
        return f"{kind} name is longer than {MAX_ID_BYTES} bytes of UTF-8"
    return None


def is_plain_identifier(label: str) -> bool:
    """`label` can be used as an SQL identifier as it is (see the module's docstring)."""
    return bool(_PLAIN.fullmatch(label)) and not label.startswith(RESERVED_PREFIXES)


def sql_identifier(label: str) -> str:
    """The SQL identifier derived from `label`; stable, safe, at most 63 bytes."""
    assert label_problem("label", label) is None, label
    if is_plain_identifier(label):
        return label
    digest = hashlib.sha256(label.encode("utf-8")).hexdigest()[:_HASH_DIGITS]
    slug = _NOT_SLUG.sub("_", label.lower()).strip("_")[:_SLUG_MAX].rstrip("_")
    # The slug is followed by "_": a slug "pg" or "ledger" would make a reserved prefix too.
    if not slug or not slug[0].isalpha() or (slug + "_").startswith(RESERVED_PREFIXES):
        slug = ("t_" + slug)[:_SLUG_MAX].rstrip("_")
    identifier = f"{slug}_{digest}"
    assert _IDENTIFIER.fullmatch(identifier), identifier
    assert not identifier.startswith(RESERVED_PREFIXES), identifier
    return identifier
