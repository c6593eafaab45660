"""A tidy package, in the spirit of TigerBeetle's `tidy.zig`: no function longer than a reader
holds in view (70 lines) unless the list below names it with its reason, and no SQL statement
kept in a Python module of `cli/` (the store's, reconciliation storage's and the audit's modules
are held to the same by their own tests). Read from the source, nothing imported.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import ledger_engine

PACKAGE = Path(ledger_engine.__file__).parent
MAX_LINES = 70

# (module, function) -> why it is longer.
LONG_ALLOWED = {
    ("core/transaction.py", "execute"): (
        "the hot loop: one transaction's steps inline, since a call per step costs "
        "(bench/studies/the-executor.md)"
    ),
    ("audit/expectations.py", "build_expectations"): (
        "the whole-ledger suite's rules, declared one expression each: a list, no steps"
    ),
    ("audit/batch_expectations.py", "build_batch_expectations"): (
        "the batch suite's rules, declared one expression each: a list, no steps"
    ),
}
# A string constant that starts like an SQL statement.
SQL_START = re.compile(
    r"\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|GRANT|REVOKE|LOCK|SET|RESET|TRUNCATE"
    r"|COPY|SAVEPOINT|RELEASE|ROLLBACK|WITH|BEGIN|COMMIT)\b"
)
# (module, line's text) -> why that SQL text is there.
SQL_ALLOWED = {
    ("cli/pipeline.py", "SELECT * FROM "): "the demo prints a query for the user to run",
}


def lengths(source: str) -> dict[str, int]:
    """The length in lines of each function and method of `source` (the longest of a name)."""
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = node.end_lineno - node.lineno + 1
            found[node.name] = max(length, found.get(node.name, 0))
    return found


def functions() -> dict[tuple[str, str], int]:
    """Every function and method of the package: its length in lines, by (module, name)."""
    return {
        (str(path.relative_to(PACKAGE)), name): length
        for path in sorted(PACKAGE.rglob("*.py"))
        for name, length in lengths(path.read_text(encoding="utf-8")).items()
    }


def test_the_lengths_are_read_as_a_reader_counts_them() -> None:
    """A control: a nested function counts on its own, and inside its outer one."""
    body = "\n".join(f"    x{n} = {n}" for n in range(70))
    source = (
        f"def outer():\n    def inner():\n        pass\n{body}\n\nasync def short():\n    pass\n"
    )
    assert lengths(source) == {"outer": 73, "inner": 2, "short": 2}


def test_no_function_is_longer_than_a_reader_holds_in_view() -> None:
    long = {key: n for key, n in functions().items() if n > MAX_LINES}
    assert set(long) - set(LONG_ALLOWED) == set(), long


def test_each_long_function_allowed_is_still_long() -> None:
    """A function split since it was allowed leaves the list (so it stays a list of reasons)."""
    lengths = functions()
    assert {
        key: lengths.get(key, 0) for key in LONG_ALLOWED if lengths.get(key, 0) <= MAX_LINES
    } == {}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def test_no_cli_module_keeps_a_statement_in_python() -> None:
    found = []
    for path in sorted((PACKAGE / "cli").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = _docstrings(tree)
        module = str(path.relative_to(PACKAGE))
        for node in ast.walk(tree):
            text = node.value if isinstance(node, ast.Constant) else None
            if not isinstance(text, str) or id(node) in docstrings or not SQL_START.match(text):
                continue
            if (module, text) not in SQL_ALLOWED:
                found.append(f"{module}:{node.lineno}: {text[:40]!r}")
    assert found == []
