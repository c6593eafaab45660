"""The package's layers: a module imports only from its own layer and the layers below it,
so that data flows one way (events -> schedule -> execute -> commit -> audit -> report) and a
lower layer can be read, tested and reused without the ones above.

The order is written here once (`LAYERS`, lowest first). Every import counts: at the top of a
module, inside a function (a lazy import is still a dependency) and under `TYPE_CHECKING`.
Read from the source, nothing imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

import ledger_engine

PACKAGE = Path(ledger_engine.__file__).parent

# Lowest first. Each is a module or a package directly under `ledger_engine`.
LAYERS = (
    "errors",  # every exception
    "faults",  # the fault points tests and the soak switch on (read by config)
    "config",  # every setting, in one typed place
    "core",  # the user's contract: declarations, records, the transaction; no I/O
    "apps",  # the ledgers the platform ships (the bank)
    "landing",  # files landing in an inbox, and the triggers that watch for them
    "store",  # PostgreSQL: schema, migrations, staging, commit, lease, roles, digests
    "runtime",  # the runners: serial (the reference), in-process parallel, Spark
    "pipeline",  # the micro-batch job
    "audit",  # the checks, written apart from what they check
    "reconcile",  # statements, matching, breaks, and their storage
    "report",  # the pages: audits and reconciliations
    "web",  # the Airflow plugin: the pages served, the breaks workbench
    "tasks",  # the jobs as commands and DAG tasks run them
    "operations",  # running the platform: Airflow on this machine, a Spark cluster
    "dags",  # the DAGs' shared parts
    "cli",  # the `ledger` command
)


def layer_of(module: str) -> str | None:
    """The layer of the module `ledger_engine.<...>`; None for the package itself and for
    modules outside it."""
    parts = module.split(".")
    if parts[0] != "ledger_engine" or len(parts) < 2:
        return None
    return parts[1]


def module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    return ".".join(parts)


def imported(path: Path) -> list[tuple[int, str]]:
    """Every module the source at `path` imports (line, absolute name)."""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    return imported_by(path.read_text(encoding="utf-8"), package)


def imported_by(source: str, package: list[str]) -> list[tuple[int, str]]:
    """Every module `source`, a module of `package`, imports (line, absolute name), relative
    imports resolved."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            name = ".".join([*base, node.module] if node.module else base)
            found.append((node.lineno, name))
    return found


def sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_module_of_the_package_is_in_a_layer() -> None:
    unplaced = {
        layer_of(module_name(path)) for path in sources() if path != PACKAGE / "__init__.py"
    } - set(LAYERS)
    assert unplaced == set(), "place each in LAYERS"


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    rank = {layer: n for n, layer in enumerate(LAYERS)}
    upward = []
    for path in sources():
        mine = layer_of(module_name(path))
        if mine is None:  # the package's public surface re-exports from several layers
            continue
        for line, name in imported(path):
            theirs = layer_of(name)
            if theirs is not None and rank[theirs] > rank[mine]:
                upward.append(f"{path.relative_to(PACKAGE)}:{line}: {mine} imports {name}")
    assert upward == []


def test_the_check_sees_relative_and_lazy_imports() -> None:
    """A positive control: the reader of imports finds every form an upward import takes."""
    source = (
        "from ..cli import main\n"
        "from . import commit\n"
        "def later():\n"
        "    import ledger_engine.report.render\n"
        "    from ledger_engine.web import app\n"
    )
    names = [name for _, name in imported_by(source, ["ledger_engine", "store"])]
    assert names == [
        "ledger_engine.cli",
        "ledger_engine.store",
        "ledger_engine.report.render",
        "ledger_engine.web",
    ]
    assert [layer_of(name) for name in names] == ["cli", "store", "report", "web"]
