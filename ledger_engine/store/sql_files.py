"""The store's SQL statements, kept as files under `sql/` beside this module (and, read the
same way, those of another package that keeps its own: `package_statements`).

`sql/<module>/<what it does>.sql` holds one statement of `ledger_engine.store.<module>` (a few
hold a pair of planner settings that are set and reset together). Values are never formatted
into a statement: they are bound as psycopg2 parameters (`%s`, `%(name)s`) when it runs. A
statement that names a table derived from a declaration has `{name}` placeholders, filled by
`identified` with `psycopg2.sql.Identifier`s only.

The lines heading a file that are blank or `--` comments are for people and are left out, as
is the file's closing `;`: the text run is the statement alone, so that a generated migration
records exactly what it ran (`ledger_engine.store.schema`), and so that a `%` in a comment
never reaches psycopg2's parameter substitution.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from psycopg2 import sql

# Read as the package's resources, wherever the package is installed from.
STATEMENTS_DIR: Traversable = files(__package__) / "sql"


@cache
def statement(name: str) -> str:
    """The statement of `sql/<name>.sql` (read once), without its heading comments and `;`."""
    return file_statement(STATEMENTS_DIR.joinpath(*f"{name}.sql".split("/")))


def package_statements(package: str) -> Callable[[str], str]:
    """`statement` for the package `package`, whose statements lie in its own `sql/` folder
    the same way (`reconcile.storage`'s, for one)."""
    folder = files(package) / "sql"

    @cache
    def statement_of(name: str) -> str:
        return file_statement(folder.joinpath(*f"{name}.sql".split("/")))

    return statement_of


def file_statement(path: Traversable | Path) -> str:
    """The statement the SQL file at `path` holds: its text without the blank and `--` lines
    heading it, and without its closing `;` (every package's SQL files are read so)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    while lines and (not lines[0].strip() or lines[0].lstrip().startswith("--")):
        lines.pop(0)
    text = "\n".join(lines).rstrip().removesuffix(";").rstrip()
    if not text:
        raise ValueError(f"{path} holds no statement")
    return text


def identified(name: str, **identifiers: str) -> sql.Composed:
    """The statement of `sql/<name>.sql` with each `{placeholder}` filled by the quoted SQL
    identifier given for it: identifiers only, never values."""
    return sql.SQL(statement(name)).format(
        **{key: sql.Identifier(value) for key, value in identifiers.items()}
    )
