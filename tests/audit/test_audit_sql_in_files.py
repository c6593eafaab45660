"""The audit's SQL lives in `ledger_engine/audit/sql/`, one statement per file, and nowhere else
in the Python of `ledger_engine/audit/`; every file there is read by a module of the audit or of
the report. These checks read the files and the modules' source, no database."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import ledger_engine.audit
import ledger_engine.report
from ledger_engine.audit.proof import chain
from ledger_engine.audit.sql_files import SQL_DIR, audit_query
from tests.support.python_sql import statements_in_python

AUDIT = Path(ledger_engine.audit.__file__).parent
REPORT = Path(ledger_engine.report.__file__).parent
FILES = sorted(SQL_DIR.glob("*.sql"))
# The functions that read a file of `sql/` by name (its first argument): the audit's loader,
# the one that leaves a statement's placeholders to psycopg2's composition
# (`sql_files.composable`), and the loader's own reading of a scope's relations.
LOADERS = {"audit_query", "composable", "_text"}


def test_no_audit_module_keeps_a_statement_in_python() -> None:
    found = statements_in_python(sorted(AUDIT.rglob("*.py")))
    assert [f"{path.relative_to(AUDIT)}:{line}: {text[:40]!r}" for path, line, text in found] == []


def _names_read() -> tuple[set[str], set[str]]:
    """The file names that the modules of the audit and the report pass to a loader: whole
    (a string constant) and as the literal head of an f-string (`f"invariant_{kind}"`)."""
    names: set[str] = set()
    prefixes: set[str] = set()
    for path in sorted([*AUDIT.rglob("*.py"), *REPORT.rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            function = node.func
            called = function.id if isinstance(function, ast.Name) else None
            called = function.attr if isinstance(function, ast.Attribute) else called
            if called not in LOADERS:
                continue
            name = node.args[0]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                names.add(name.value)
            elif isinstance(name, ast.JoinedStr) and name.values:
                head = name.values[0]
                if isinstance(head, ast.Constant) and head.value:
                    prefixes.add(head.value)
    return names, prefixes


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
def test_each_file_is_read_by_a_module_of_the_audit_or_the_report(path: Path) -> None:
    names, prefixes = _names_read()
    assert path.stem in names or any(path.stem.startswith(p) for p in prefixes), (
        f"sql/{path.name} is read by no module of ledger_engine/audit/ or ledger_engine/report/"
    )


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
def test_each_file_says_first_what_it_holds(path: Path) -> None:
    assert path.read_text(encoding="utf-8").startswith("-- ")


def test_the_chain_reads_the_fields_its_hash_covers() -> None:
    # The files write out the columns `chain.batch_row_hash` hashes, and the recorded hash.
    for name in ("chain_batches", "chain_slice"):
        head = audit_query(name).split("FROM", 1)[0].removeprefix("SELECT")
        columns = tuple(column.strip() for column in head.split(","))
        assert columns == (*chain.HASHED_FIELDS, "batch_hash"), name
