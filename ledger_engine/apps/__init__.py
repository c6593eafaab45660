"""Loading the application a run executes: the `LEDGER_APP` setting.

`LEDGER_APP` names a function that builds the ledger, as `module:function` (a module
importable from the environment, such as the bank, `ledger_engine.apps.bank.ledger`) or as
`path/to/file.py:function` (a module of the user's own, loaded from its file). Spark's
executors receive a user's module by themselves (`ledger_engine.runtime.spark.shipping`).
"""

from __future__ import annotations

import importlib
import importlib.util
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


def _module_from_file(path: Path) -> ModuleType:
    """The module in `path`, imported under its file's stem (the name executors import)."""
    path = path.resolve()
    if not path.is_file():
        raise FileNotFoundError(f"LEDGER_APP names {path}, which is not a file")
    name = path.stem
    loaded = sys.modules.get(name)
    if loaded is not None and Path(getattr(loaded, "__file__", "") or "").resolve() == path:
        return loaded
    if loaded is not None:
        raise ValueError(f"LEDGER_APP's module name {name!r} is taken by {loaded!r}")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # before running it, as `import` does
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
