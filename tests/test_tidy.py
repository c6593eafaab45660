"""A tidy package, in the spirit of TigerBeetle's `tidy.zig`: no function longer than a reader
holds in view (70 lines) unless the list below names it with its reason, and no SQL statement
kept in a Python module of `cli/` (the store's, reconciliation storage's and the audit's modules
are held to the same by their own tests). Read from the source, nothing imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

import ledger_engine
from tests.support.python_sql import statements_in_python

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


def test_no_cli_module_keeps_a_statement_in_python() -> None:
    found = statements_in_python(sorted((PACKAGE / "cli").glob("*.py")))
    kept = [(str(path.relative_to(PACKAGE)), line, text) for path, line, text in found]
    assert [f"{m}:{line}: {t[:40]!r}" for m, line, t in kept if (m, t) not in SQL_ALLOWED] == []
