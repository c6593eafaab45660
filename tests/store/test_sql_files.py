"""The store's SQL lives in `ledger_engine/store/sql/`, one statement per file, and nowhere
else in its Python; so does reconciliation storage's, in `ledger_engine/reconcile/storage/sql/`
(read by the same loader): these checks read the files and the modules' source, no
database."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import ledger_engine.reconcile.storage
import ledger_engine.store
from ledger_engine.reconcile.storage.sql_files import statement as storage_statement
from ledger_engine.store.lease import LEDGER_KEY
from ledger_engine.store.sql_files import STATEMENTS_DIR, statement
from tests.support.python_sql import statements_in_python

STORE = Path(ledger_engine.store.__file__).parent
STORAGE = Path(ledger_engine.reconcile.storage.__file__).parent
# Each package that keeps its statements as files: its folder, and how it reads them.
PACKAGES: dict[Path, Callable[[str], str]] = {STORE: statement, STORAGE: storage_statement}
FILES = [path for package in PACKAGES for path in sorted((package / "sql").glob("*/*.sql"))]
NAMES = [(path.parents[2], f"{path.parent.name}/{path.stem}") for path in FILES]


@pytest.mark.parametrize("package", list(PACKAGES), ids=lambda p: p.name)
def test_the_files_sit_one_folder_deep_by_module(package: Path) -> None:
    # One folder per module that runs them: the glob that ships them (`sql/*/*.sql`) and
    # this test's both rely on it.
    everything = sorted((package / "sql").rglob("*.sql"))
    assert everything == [path for path in FILES if path.parents[2] == package]
    assert everything
    modules = {path.stem for path in package.glob("*.py")}
    assert {path.parent.name for path in everything} <= modules


@pytest.mark.parametrize(("package", "name"), NAMES, ids=[n for _, n in NAMES])
def test_each_file_is_a_statement_its_module_runs(package: Path, name: str) -> None:
    text = PACKAGES[package](name)
    assert text == text.strip() and not text.endswith(";")
    # Comments head the file and are left out: none reaches psycopg2 (whose parameter
    # substitution would take a `%` in one) or a generated migration's recorded text.
    assert "--" not in text
    folder, stem = name.split("/")
    runner = (package / f"{folder}.py").read_text()
    assert f'"{name}"' in runner or f'"{stem}"' in runner, (
        f"{name}.sql is not run by {package.name}/{folder}.py"
    )


@pytest.mark.parametrize("package", list(PACKAGES), ids=lambda p: p.name)
def test_no_module_keeps_a_statement_in_python(package: Path) -> None:
    found = statements_in_python(sorted(package.glob("*.py")))
    assert [f"{path.name}:{line}: {text[:40]!r}" for path, line, text in found] == []


def test_the_loader_leaves_out_heading_comments_and_the_closing_semicolon() -> None:
    raw = (Path(str(STATEMENTS_DIR)) / "schema" / "create_view.sql").read_text()
    assert raw.startswith("--") and raw.rstrip().endswith(";")
    assert statement("schema/create_view") == "CREATE VIEW {view} AS\n{query}"


@pytest.mark.parametrize("name", ["commit/lock", "lease/try_lock", "lease/unlock"])
def test_ledger_locks_are_keyed_by_the_ledgers_schema(name: str) -> None:
    # Each ledger (schema) has locks of its own; a test that takes the lease by hand reads
    # the key from `LEDGER_KEY`, so the files must write the same.
    assert LEDGER_KEY in statement(name)
