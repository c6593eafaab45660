"""The audits' SQL, kept as files under `sql/` beside this module.

A file may name three kinds of placeholder:

- `{batch}`, which Great Expectations fills with the query asset it validates (left as it is
  here);
- `{scope}`, at the head of a rule that reads a scope of batches: the relations of that scope
  (`scope`, `batches`, `events`, `logged`, `requests`), the text of `sql/scope_<scope>.sql`
  for one of `SCOPES`. The full suite's scope is the whole ledger (`LEDGER`), the batch
  suite's the batches after the last passing audit (`BATCHES`, read from `{batch}`): one
  rule's file serves both suites, and each scope file says how its relations are read;
- the SQL identifiers of declared tables and invariants (`{table}`, `{invariant}`), or of a
  key's SQL type (`{key_type}`), filled here. Identifiers are derived by the platform
  (`ledger_engine.core.naming`) and checked again at this boundary: no label or value is
  ever formatted into SQL; rules read what they need from the `ledger_declared_*` tables.

A statement the Merkle checks compose with psycopg2 (`composable`) has placeholders of a
fourth kind, filled by `psycopg2.sql` (identifiers, fixed fragments, literals), never as text.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from psycopg2 import sql

from ledger_engine.store.sql_files import file_statement

SQL_DIR = Path(__file__).with_name("sql")
_IDENTIFIER = re.compile(r"[a-z][a-z0-9_]{0,62}")
LEDGER, BATCHES = "ledger", "batches"  # the scopes: `sql/scope_ledger.sql`, `scope_batches.sql`
SCOPES = (LEDGER, BATCHES)


@cache
def _text(name: str) -> str:
    """The query of `sql/<name>.sql` without the comment lines heading the file (they are for
    people; Great Expectations wants a query asset to start with `SELECT`)."""
    return file_statement(SQL_DIR / f"{name}.sql")


def audit_query(name: str, scope: str | None = None, **identifiers: str) -> str:
    """The query of `sql/<name>.sql` with `identifiers` filled in and, for a rule over a
    scope, the relations of `scope` (one of `SCOPES`) at its head; `{batch}` left in place."""
    for key, value in identifiers.items():
        if not _IDENTIFIER.fullmatch(value):
            raise ValueError(f"{key} {value!r} is not an SQL identifier the platform derived")
    text = _text(name)
    if ("{scope}" in text) != (scope is not None):
        raise ValueError(f"sql/{name}.sql and the scope {scope!r} do not go together")
    if scope is not None:
        if scope not in SCOPES:
            raise ValueError(f"{scope!r} is not one of the scopes {SCOPES}")
        # The scope's relations are fixed text of this package, never data: filled in first,
        # so that its own `{batch}` is left for Great Expectations like the rule's.
        text = text.replace("{scope}", _text(f"scope_{scope}"), 1)
    return text.format(batch="{batch}", **identifiers).strip()


def composable(name: str) -> sql.SQL:
    """The statement of `sql/<name>.sql` as psycopg2 SQL, for a statement composed with
    `sql.SQL.format`: its `{placeholders}` are filled by psycopg2 (identifiers as
    `sql.Identifier`, fixed fragments, a table name as `sql.Literal`), never as text; values
    stay bound (`%s`). (`audit_query` fills its placeholders as validated text.)"""
    return sql.SQL(_text(name))
