"""A tidy package, in the spirit of TigerBeetle's `tidy.zig`: no function longer than a reader
holds in view (70 lines) unless the list below names it with its reason, and no SQL statement
kept in a Python module of `cli/` (the store's, reconciliation storage's and the audit's modules
are held to the same by their own tests); and tidy tests: a test module takes its helpers from
`tests/support` only, never from a conftest or another test module, and no helper or fixture
is written twice (one body under two names is one helper, kept in `tests/support` or, for a
fixture, in the conftest of the folders that share it). Read from the source, nothing imported.
"""

from __future__ import annotations

import ast
import copy
from collections import defaultdict
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


# -- helpers written twice ---------------------------------------------------------------------

# A body of fewer nodes (`pass`, `return event["k"]`, `row.add(event["amount"])`, a call handed
# on) says all it does on its line: naming it in `tests/support` would only hide that line.
MIN_TWIN_NODES = 8
Function = ast.FunctionDef | ast.AsyncFunctionDef


def _is_fixture(node: Function) -> bool:
    def name(decorator: ast.expr) -> str:
        return ast.unparse(decorator.func if isinstance(decorator, ast.Call) else decorator)

    return any(name(d) in ("pytest.fixture", "fixture") for d in node.decorator_list)


class _Renamed(ast.NodeTransformer):
    """Gives the names of `renamed` their new spelling, wherever they are read or bound."""

    def __init__(self, renamed: dict[str, str]) -> None:
        self.renamed = renamed

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self.renamed.get(node.id, node.id)
        return node


def _parameters(node: Function) -> list[str]:
    args = node.args
    every = (*args.posonlyargs, *args.args, args.vararg, *args.kwonlyargs, args.kwarg)
    return [a.arg for a in every if a is not None]


def normalised_body(node: Function) -> tuple[str, int]:
    """What a function does, whatever its names: the `ast.dump` of its body without its
    docstring, its own name and the names it binds (spelt by the order they come in); and the
    body's size in nodes. A fixture's or a test's parameters keep their names (they name what
    is injected), and a test's decorators count (one body over other inputs is another test)."""
    body = copy.deepcopy(node.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    injected = _is_fixture(node) or node.name.startswith("test_")
    bound = [] if injected else _parameters(node)
    for statement in body:
        for name in ast.walk(statement):
            if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Store):
                bound += [] if name.id in bound else [name.id]
    module = _Renamed({name: f"_{n}" for n, name in enumerate(bound)}).visit(ast.Module(body, []))
    if node.name.startswith("test_"):
        module.body.insert(0, ast.Expr(ast.List(node.decorator_list, ast.Load())))
    size = sum(not isinstance(n, ast.expr_context) for n in ast.walk(module)) - 1
    return ast.dump(module), size


def twin_functions(root: Path) -> list[list[str]]:
    """The functions and fixtures under `root` with one body (as `normalised_body` reads it),
    each group as `path:line name`; a group all in `support/` is that package's own affair."""
    bodies: dict[str, list[str]] = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, Function):
                body, size = normalised_body(node)
                if size >= MIN_TWIN_NODES:
                    bodies[body].append(f"{path.relative_to(root)}:{node.lineno} {node.name}")
    return [
        group
        for group in bodies.values()
        if len(group) > 1 and not all(place.startswith("support/") for place in group)
    ]


def test_the_twins_reader_finds_one_body_under_other_names(tmp_path: Path) -> None:
    """A control: helpers alike but for their names, parameters, locals and docstrings are
    found, in a test module and in `support/`; fixtures of other fixtures, tests with other
    decorators, short bodies and twins within `support/` alone are not."""
    (tmp_path / "support").mkdir()
    failed = "    return {c.name: c.findings for c in checks if not c.passed}\n"
    (tmp_path / "support" / "checks.py").write_text(
        f"def failed(checks):\n{failed}\ndef twin(checks):\n{failed}", encoding="utf-8"
    )
    (tmp_path / "support" / "alone.py").write_text(
        "def one(n):\n    return [n, n + 1, n * 2]\n\ndef two(m):\n    return [m, m + 1, m * 2]\n",
        encoding="utf-8",
    )
    (tmp_path / "test_a.py").write_text(
        'def failures(results):\n    """Doc."""\n'
        "    return {r.name: r.findings for r in results if not r.passed}\n\n"
        "def key(e):\n    return e['k']\n\n"
        "@pytest.fixture\ndef conn(url):\n    with connect(url) as c:\n        yield c\n\n"
        "@given(small())\ndef test_x(spark, inputs):\n    assert spark_match(spark, inputs)\n",
        encoding="utf-8",
    )
    (tmp_path / "test_b.py").write_text(
        "def by_k(event):\n    return event['k']\n\n"
        "@pytest.fixture\ndef conn(other_url):\n    with connect(other_url) as c:\n"
        "        yield c\n\n"
        "@given(large())\ndef test_y(spark, inputs):\n    assert spark_match(spark, inputs)\n",
        encoding="utf-8",
    )
    assert twin_functions(tmp_path) == [
        ["support/checks.py:1 failed", "support/checks.py:4 twin", "test_a.py:1 failures"]
    ]


def test_no_helper_or_fixture_is_written_twice() -> None:
    assert [" = ".join(group) for group in twin_functions(TESTS)] == []
