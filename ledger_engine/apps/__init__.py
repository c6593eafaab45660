"""Loading the application a run executes: the `LEDGER_APP` setting.

`LEDGER_APP` names a function that builds the ledger, as `module:function` (a module
importable from the environment, such as the bank, `ledger_engine.apps.bank.ledger`) or as
`path/to/file.py:function` (a module of the user's own, loaded from its file). A file is
imported as Python runs a script: its folder goes on `sys.path`, so that it imports its sibling
modules; a file inside a package (its folder holds an `__init__.py`) is imported as that
package's module (`pkg.sub.app`) from the folder above the package, so that its relative
imports work. Spark's executors receive the user's code by themselves
(`ledger_engine.apps.user_code`, `ledger_engine.runtime.spark.shipping`).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

from ledger_engine.core.declarations import StreamingLedger


def load_ledger(app: str) -> StreamingLedger:
    """The ledger built by `module:function` or `path/to/file.py:function` (`LEDGER_APP`)."""
    module_name, _, function_name = app.rpartition(":")
    if not module_name or not function_name:
        raise ValueError(
            f"LEDGER_APP must look like 'module:function' or 'file.py:function', got {app!r}"
        )
    module = (
        _module_from_file(Path(module_name))
        if module_name.endswith(".py")
        else (importlib.import_module(module_name))
    )
    ledger = getattr(module, function_name)()
    if not isinstance(ledger, StreamingLedger):
        raise TypeError(f"{app} returned {type(ledger).__name__}, not a StreamingLedger")
    ledger.check()
    return ledger


def module_location(path: Path) -> tuple[Path, str]:
    """The folder that a module file is imported from, and its dotted name there: the
    file's own folder and its stem, or, for a file inside a package (folders holding an
    `__init__.py`), the folder above the outermost package and `package.sub.module`."""
    path = path.resolve()
    parts = [] if path.stem == "__init__" else [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        parts.insert(0, folder.name)
        folder = folder.parent
    if not parts or not all(part.isidentifier() for part in parts):
        raise ValueError(f"LEDGER_APP names {path}, which cannot be imported as a module")
    return folder, ".".join(parts)


def _module_from_file(path: Path) -> ModuleType:
    """The module in `path`, imported under its name in its folder (the name executors import)."""
    path = path.resolve()
    if not path.is_file():
        raise FileNotFoundError(f"LEDGER_APP names {path}, which is not a file")
    root, name = module_location(path)
    top = name.partition(".")[0]
    loaded = sys.modules.get(top)
    if loaded is not None and not _loaded_from(loaded, root):
        raise ValueError(f"LEDGER_APP's module name {top!r} is taken by {loaded!r}")
    if str(root) not in sys.path:
        # As Python does for a script: its folder first, so that its siblings import.
        sys.path.insert(0, str(root))
        importlib.invalidate_caches()
    module = importlib.import_module(name)
    found = Path(getattr(module, "__file__", "") or "").resolve()
    if found != path:
        raise ValueError(f"LEDGER_APP names {path}, but {name!r} imports {found}")
    return module


def _loaded_from(module: ModuleType, root: Path) -> bool:
    """Whether the top-level `module` (a module or a package) was imported from folder `root`."""
    if hasattr(module, "__path__"):  # a package: the folders it spans
        return any(Path(folder).resolve().parent == root for folder in module.__path__)
    file = getattr(module, "__file__", None)
    return file is not None and Path(file).resolve().parent == root
