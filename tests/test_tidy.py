"""A tidy package, in the spirit of TigerBeetle's `tidy.zig`: no function longer than a reader
holds in view (70 lines) unless the list below names it with its reason, and no SQL statement
kept in a Python module of `cli/` (the store's, reconciliation storage's and the audit's modules
are held to the same by their own tests); and tidy tests: a test module takes its helpers from
`tests/support` only, never from a conftest or another test module. Read from the source,
nothing imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

import ledger_engine
from tests.support.python_sql import statements_in_python

PACKAGE = Path(ledger_engine.__file__).parent
TESTS = Path(__file__).parent
MAX_LINES = 70

# (module, function) -> why it is longer.
LONG_ALLOWED = {
    ("core/transaction.py", "execute"): (
        "the hot loop: one transaction's steps inline, since a call per step costs "
        "(bench/studies/the-executor.md)"
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


def imported_modules(source: str) -> list[str]:
    """The modules `source` imports, absolute imports only (a test module has no package)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(node.module)
    return found


def _outside_support(tests_root: Path) -> list[Path]:
    return [
        path
        for path in sorted(tests_root.rglob("*.py"))
        if "support" not in path.relative_to(tests_root).parts
    ]


def helpers_from_elsewhere(path: Path, local: set[str]) -> list[str]:
    """What the test module at `path` imports from the test tree outside `tests/support`: a
    module of `tests` other than `tests.support`, or one of `local`, the modules of the test
    tree found by their bare name (as pytest's rootdir insertion would let `import conftest`
    or `import test_x`)."""
    return [
        name
        for name in imported_modules(path.read_text(encoding="utf-8"))
        if (name.split(".")[0] == "tests" and not name.startswith("tests.support"))
        or name.split(".")[0] in local
    ]


def test_the_helpers_reader_finds_an_import_of_a_conftest_or_a_test_module(tmp_path: Path):
    """A control: imports from a conftest, another test module and a test folder are found;
    imports from `tests.support` and the libraries are not."""
    (tmp_path / "conftest.py").write_text("", encoding="utf-8")
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "test_other.py").write_text("", encoding="utf-8")
    module = tmp_path / "test_this.py"
    module.write_text(
        "import conftest\nfrom test_other import helper\nfrom tests.engine.x import y\n"
        "from tests.support.events import event_file\nimport pytest\n",
        encoding="utf-8",
    )
    local = {path.stem for path in _outside_support(tmp_path)}
    assert helpers_from_elsewhere(module, local) == ["conftest", "test_other", "tests.engine.x"]


def test_test_modules_take_their_helpers_from_tests_support_only() -> None:
    modules = _outside_support(TESTS)
    local = {path.stem for path in modules}
    found = {
        str(path.relative_to(TESTS)): names
        for path in modules
        if (names := helpers_from_elsewhere(path, local))
    }
    assert found == {}
