"""The user's own code that an application needs elsewhere (on Spark's executors), packed.

A ledger's transaction and key functions are pickled by reference (module and name), so a
process that runs them must import their modules, and whatever those import. What the
environment provides (the standard library, installed packages, this platform) is there
already; the user's own modules are not. `application_code` finds them:

- the top-level modules and packages that define the ledger's functions (for a function of
  `__main__`, which is pickled by value, what the script imports);
- every module of the user's that these import, at module level or inside a function, found
  by reading their source (`import x`, `from x import y`, `importlib.import_module("x")`),
  and what those import in turn;
- every module of the user's that the driver has imported from the same folders (a plug-in
  imported by a computed name, say).

A package travels whole, its data files and subpackages with it, so that its relative imports
and files it reads beside itself work. A lone module travels as its file. `pack` writes them to
one zip named by its content, so that an unchanged application is packed and sent once.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import os
import site
import sys
import sysconfig
import tempfile
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from ledger_engine.core.declarations import StreamingLedger

_PLATFORM = "ledger_engine"
_NOT_SHIPPED = {_PLATFORM, "__main__", "builtins"}
ARCHIVE_PREFIX = "ledger-app-"


@dataclass(frozen=True, order=True)
class CodeUnit:
    """One top-level module or package of the user's: its name and where it lies (a
    module's file, or a package's folders: several for a namespace package)."""

    name: str
    locations: tuple[Path, ...]
    is_package: bool

    def files(self) -> Iterator[tuple[Path, str]]:
        """Each file of the unit with its name in an archive (`pkg/sub/data.json`)."""
        if not self.is_package:
            (location,) = self.locations
            yield location, location.name
            return
        for folder in self.locations:
            for path in _package_files(folder):
                yield path, f"{self.name}/{path.relative_to(folder).as_posix()}"

    def roots(self) -> set[Path]:
        """The folders it is imported from."""
        return {location.parent for location in self.locations}


@dataclass(frozen=True)
class ApplicationCode:
    """The user's code a ledger needs, as units sorted by name."""

    units: tuple[CodeUnit, ...]

    def files(self) -> list[tuple[Path, str]]:
        listed = sorted((name, path) for unit in self.units for path, name in unit.files())
        names = [name for name, _ in listed]
        assert len(names) == len(set(names)), "two units pack the same file name"
        return [(path, name) for name, path in listed]


def application_code(ledger: StreamingLedger) -> ApplicationCode:
    """The user's modules and packages that running `ledger`'s functions imports."""
    units: dict[str, CodeUnit] = {}
    seen: set[str] = set(_NOT_SHIPPED)
    pending = sorted(_defining_modules(ledger))
    main = sys.modules.get("__main__")
    if "__main__" in pending and main is not None:
        pending.extend(_imported_by_main(main))
    while True:
        if not pending:  # the closure by source is complete: add what the driver imported
            roots = set().union(*(unit.roots() for unit in units.values()))
            pending = [name for name in _imported_from(roots) if name not in seen]
            if not pending:
                return ApplicationCode(tuple(sorted(units.values())))
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        unit = _user_unit(name)
        if unit is not None:
            units[name] = unit
            pending.extend(sorted(_imported_by(unit) - seen))


def pack(code: ApplicationCode, folder: Path | None = None) -> Path | None:
    """A zip of `code`'s files (in `folder`, the temporary folder by default) named by their
    names and contents, written once; `None` when the application has no code of the user's."""
    files = code.files()
    if not files:
        return None
    digest = hashlib.sha256()
    for path, name in files:
        digest.update(name.encode() + b"\0" + _file_digest(path, *_stamp(path)) + b"\0")
    name = f"{ARCHIVE_PREFIX}{digest.hexdigest()[:20]}.zip"
    target = (folder or Path(tempfile.gettempdir())) / name
    if not target.exists():
        partial = target.with_suffix(f".{os.getpid()}.partial")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
            for path, name in files:
                archive.write(path, name)
        partial.replace(target)  # whole or not at all, for a concurrent run packing the same
    return target


# -- finding the units ---------------------------------------------------------------------


def _defining_modules(ledger: StreamingLedger) -> set[str]:
    """The top-level names of the modules defining `ledger`'s transaction and key functions."""
    modules = set()
    for stream in ledger.streams.values():
        for function in (stream.fn, *(binding.key_fn for binding in stream.bindings)):
            while isinstance(function, functools.partial):  # the function it wraps
                function = function.func
            modules.add(getattr(function, "__module__", None) or "__main__")
    return {name.split(".")[0] for name in modules}


def _imported_by_main(main: ModuleType) -> list[str]:
    """What a script run as `__main__` imports, if it is a file of the user's."""
    file = getattr(main, "__file__", None)
    if file is None or _provided(Path(file).resolve()):
        return []
    return sorted(_imports_in(Path(file).resolve()))


def _user_unit(name: str) -> CodeUnit | None:
    """Top-level module `name` as a unit, or `None` where the environment provides it (or
    where it cannot be found: an optional import the code guards)."""
    module = sys.modules.get(name)
    try:
        spec = module.__spec__ if module is not None else importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        # A namespace package lists a folder once per `sys.path` entry that leads to it (a
        # folder on the path twice, as `PYTHONPATH` and pytest's rootdir make it): once here.
        locations = spec.submodule_search_locations
        folders = tuple(dict.fromkeys(Path(folder).resolve() for folder in locations))
        if not folders or any(_provided(folder) for folder in folders):
            return None
        return CodeUnit(name, folders, is_package=True)
    if spec.origin in (None, "built-in", "frozen") or not spec.has_location:
        return None
    origin = Path(spec.origin).resolve()
    return None if _provided(origin) else CodeUnit(name, (origin,), is_package=False)


def _imported_by(unit: CodeUnit) -> set[str]:
    """The top-level names that `unit`'s Python files import (relative imports stay inside)."""
    names: set[str] = set()
    for path, _ in unit.files():
        if path.suffix == ".py":
            names.update(_imports_in(path))
    return names


def _imported_from(roots: set[Path]) -> list[str]:
    """The top-level modules of the user's that this process imported from `roots`."""
    names: list[str] = []
    if not roots:
        return names
    for name, module in list(sys.modules.items()):
        if "." in name or name in _NOT_SHIPPED:
            continue
        locations = [*getattr(module, "__path__", []), getattr(module, "__file__", None)]
        for location in filter(None, locations):
            if Path(location).resolve().parent in roots:
                names.append(name)
                break
    return sorted(names)


def _imports_in(path: Path) -> frozenset[str]:
    return _imports_in_source(path, *_stamp(path))


@functools.cache
def _imports_in_source(path: Path, mtime_ns: int, size: int) -> frozenset[str]:
    """The top-level module names a Python file imports anywhere in it (cached per version of
    the file). A file that does not parse imports nothing here: importing it fails anyway."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError):
        return frozenset()
    return frozenset(_import_names(tree))


def _import_names(tree: ast.AST) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0]
        elif isinstance(node, ast.Call) and _is_import_call(node.func) and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                yield from _absolute_top(first.value)


def _absolute_top(name: str) -> Iterator[str]:
    """The top-level module of an absolute dotted name (none for a relative one)."""
    if name and not name.startswith("."):
        yield name.split(".")[0]


def _is_import_call(function: ast.expr) -> bool:
    """`importlib.import_module(...)`, `import_module(...)` or `__import__(...)`."""
    if isinstance(function, ast.Attribute):
        return function.attr == "import_module"
    return isinstance(function, ast.Name) and function.id in ("import_module", "__import__")


# -- what the environment provides -----------------------------------------------------------


def _provided(path: Path) -> bool:
    """Whether `path` belongs to the environment (Python itself, an installed package, this
    platform): every process of the same environment imports it without being sent it."""
    return any(path.is_relative_to(root) for root in _environment_roots())


@functools.cache
def _environment_roots() -> tuple[Path, ...]:
    paths = sysconfig.get_paths()
    roots = {Path(paths[key]) for key in ("purelib", "platlib", "stdlib", "platstdlib", "scripts")}
    roots.update(Path(prefix) for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix})
    roots.update(Path(folder) for folder in site.getsitepackages())
    roots.add(Path(site.getusersitepackages()))
    platform = importlib.util.find_spec(_PLATFORM)
    assert platform is not None and platform.submodule_search_locations
    roots.update(Path(folder) for folder in platform.submodule_search_locations)
    return tuple(sorted(root.resolve() for root in roots))


# -- files -----------------------------------------------------------------------------------


def _package_files(folder: Path) -> Iterable[Path]:
    """Every file of a package folder: sources, data files, subpackages; no caches, compiled
    files or hidden entries (a `.git`), no symbolic link out of the folder followed."""
    for directory, subdirectories, names in os.walk(folder):
        subdirectories[:] = sorted(
            d for d in subdirectories if not d.startswith(".") and d != "__pycache__"
        )
        for name in sorted(names):
            if name.startswith(".") or name.endswith((".pyc", ".pyo")):
                continue
            path = Path(directory) / name
            if path.is_file():
                yield path


def _stamp(path: Path) -> tuple[int, int]:
    status = path.stat()
    return status.st_mtime_ns, status.st_size


@functools.cache
def _file_digest(path: Path, mtime_ns: int, size: int) -> bytes:
    """SHA-256 of a file's content, cached per version of the file (its time and size)."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").digest()
