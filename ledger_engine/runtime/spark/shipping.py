"""Shipping an application's own code to Spark's executors.

A ledger's transaction and key functions are pickled by reference (module and name), so an
executor must be able to import their module. The platform's own package and whatever is
installed into the environment are importable there (the executors run the same
environment); an application in the user's own module or package is not, on a standalone
cluster nor even in `local[*]`, whose Python workers do not see the driver's `sys.path`.
`ship_application` sends each such module with `SparkContext.addPyFile`: a module as its
file, a package as a zip of its folder. Executors then import it like any other, so no user
has to pass `--py-files`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import sysconfig
import tempfile
import zipfile
from pathlib import Path

from pyspark.sql import SparkSession

from ledger_engine.core.declarations import StreamingLedger

_PLATFORM = "ledger_engine"
# What each Spark application was sent already (by application id): addPyFile once per file.
_SHIPPED: dict[str, set[Path]] = {}


def application_modules(ledger: StreamingLedger) -> set[str]:
    """The top-level modules or packages holding `ledger`'s transaction and key functions,
    other than the platform's own and `__main__` (whose functions cloudpickle sends by value)."""
    modules = set()
    for stream in ledger.streams.values():
        functions = [stream.fn, *(binding.key_fn for binding in stream.bindings)]
        modules.update(getattr(fn, "__module__", None) or "__main__" for fn in functions)
    tops = {name.split(".")[0] for name in modules}
    return {top for top in tops if top not in (_PLATFORM, "__main__", "builtins")}


def ship_application(spark: SparkSession, ledger: StreamingLedger) -> list[Path]:
    """Send to the executors each module of `ledger`'s code that they cannot import from the
    environment; return the files sent now."""
    context = spark.sparkContext
    shipped = _SHIPPED.setdefault(context.applicationId, set())
    sent = []
    for top in sorted(application_modules(ledger)):
        path = _shippable(top)
        if path is None or path in shipped:
            continue
        context.addPyFile(str(path))
        shipped.add(path)
        sent.append(path)
    return sent


def _shippable(top: str) -> Path | None:
    """The file that carries module `top` to an executor, or `None` if it needs none."""
    module = sys.modules.get(top)
    spec = module.__spec__ if module is not None else importlib.util.find_spec(top)
    if spec is None or spec.origin in (None, "built-in", "frozen"):
        return None
    origin = Path(spec.origin).resolve()
    if _installed(origin):
        return None
    if spec.submodule_search_locations:  # a package: its whole folder
        return _zip_package(top, origin.parent)
    return origin


def _installed(path: Path) -> bool:
    paths = sysconfig.get_paths()
    roots = {Path(paths[key]).resolve() for key in ("purelib", "platlib", "stdlib")}
    return any(path.is_relative_to(root) for root in roots)


def _zip_package(name: str, folder: Path) -> Path:
    """A zip of package `folder` (sources and data, no caches), named by its content so that
    an unchanged package is not sent twice and a changed one is sent again."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    target = Path(tempfile.gettempdir()) / f"ledger-app-{name}-{digest.hexdigest()[:16]}.zip"
    if not target.exists():
        partial = target.with_suffix(f".{os.getpid()}.partial")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in files:
                archive.write(path, Path(name) / path.relative_to(folder))
        partial.replace(target)
    return target
