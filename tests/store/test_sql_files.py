"""The store's SQL lives in `ledger_engine/store/sql/`, one statement per file, and nowhere
else in its Python: these checks read the files and the modules' source, no database."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import ledger_engine.store
from ledger_engine.store.lease import LEDGER_KEY
from ledger_engine.store.sql_files import STATEMENTS_DIR, statement

STORE = Path(ledger_engine.store.__file__).parent
FILES = sorted(Path(str(STATEMENTS_DIR)).glob("*/*.sql"))
NAMES = [f"{path.parent.name}/{path.stem}" for path in FILES]
# A string constant that starts like an SQL statement.
_SQL_START = re.compile(
    r"\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|GRANT|REVOKE|LOCK|SET|RESET|TRUNCATE"
    r"|COPY|SAVEPOINT|RELEASE|ROLLBACK|WITH|BEGIN|COMMIT)\b"
)


def test_the_files_sit_one_folder_deep_by_module() -> None:
    # One folder per module that runs them: the glob that ships them (`sql/*/*.sql`) and
    # this test's both rely on it.
    everything = sorted(Path(str(STATEMENTS_DIR)).rglob("*.sql"))
    assert everything == FILES
    assert len(FILES) > 50
    modules = {path.stem for path in STORE.glob("*.py")}
    assert {path.parent.name for path in FILES} <= modules


@pytest.mark.parametrize("name", NAMES)
def test_each_file_is_a_statement_its_module_runs(name: str) -> None:
    text = statement(name)
    assert text == text.strip() and not text.endswith(";")
    # Comments head the file and are left out: none reaches psycopg2 (whose parameter
    # substitution would take a `%` in one) or a generated migration's recorded text.
    assert "--" not in text
    folder, stem = name.split("/")
    assert (
        f'"{name}"' in (STORE / f"{folder}.py").read_text()
        or f'"{stem}"' in (STORE / f"{folder}.py").read_text()
    ), f"{name}.sql is not run by ledger_engine/store/{folder}.py"


def test_no_store_module_keeps_a_statement_in_python() -> None:
    found = []
    for path in sorted(STORE.glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        docstrings = {id(doc) for doc in map(_docstring, ast.walk(tree)) if doc is not None}
        for node in ast.walk(tree):
            text = node.value if isinstance(node, ast.Constant) else None
            if isinstance(text, str) and id(node) not in docstrings and _SQL_START.match(text):
                found.append(f"{path.name}:{node.lineno}: {text[:40]!r}")
    assert not found, found


def _docstring(node: ast.AST) -> ast.Constant | None:
    if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    first = node.body[0] if node.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        return first.value
    return None


def test_the_loader_leaves_out_heading_comments_and_the_closing_semicolon() -> None:
    raw = (Path(str(STATEMENTS_DIR)) / "schema" / "create_view.sql").read_text()
    assert raw.startswith("--") and raw.rstrip().endswith(";")
    assert statement("schema/create_view") == "CREATE VIEW {view} AS\n{query}"


@pytest.mark.parametrize("name", ["commit/lock", "lease/try_lock", "lease/unlock"])
def test_ledger_locks_are_keyed_by_the_ledgers_schema(name: str) -> None:
    # Each ledger (schema) has locks of its own; a test that takes the lease by hand reads
    # the key from `LEDGER_KEY`, so the files must write the same.
    assert LEDGER_KEY in statement(name)
