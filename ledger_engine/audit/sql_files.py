"""The audits' SQL, kept as files under `sql/` beside this module.

A file may name two kinds of placeholder: `{batch}`, which Great Expectations fills with the
query asset it validates (left as it is here), and the SQL identifiers of declared tables and
invariants (`{table}`, `{invariant}`), filled here. Identifiers are derived by the platform
(`ledger_engine.core.naming`) and checked again at this boundary: no label or value is ever
formatted into SQL; rules read what they need from the `ledger_declared_*` tables.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

SQL_DIR = Path(__file__).with_name("sql")
_IDENTIFIER = re.compile(r"[a-z][a-z0-9_]{0,62}")


@cache
def _text(name: str) -> str:
    """The query of `sql/<name>.sql` without the comment lines heading the file (they are for
    people; Great Expectations wants a query asset to start with `SELECT`)."""
    lines = (SQL_DIR / f"{name}.sql").read_text(encoding="utf-8").splitlines()
    while lines and (not lines[0].strip() or lines[0].lstrip().startswith("--")):
        lines.pop(0)
    return "\n".join(lines)


def audit_query(name: str, **identifiers: str) -> str:
    """The query of `sql/<name>.sql` with `identifiers` filled in, `{batch}` left in place."""
    for key, value in identifiers.items():
        if not _IDENTIFIER.fullmatch(value):
            raise ValueError(f"{key} {value!r} is not an SQL identifier the platform derived")
    return _text(name).format(batch="{batch}", **identifiers).strip()
