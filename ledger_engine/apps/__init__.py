"""Applications built on the ledger; `bank` is the seed use case."""

from __future__ import annotations

import importlib

from ledger_engine.core.declarations import StreamingLedger


def load_ledger(app: str) -> StreamingLedger:
    """The ledger built by `module:function` (the `LEDGER_APP` setting)."""
    module_name, _, function_name = app.partition(":")
    if not module_name or not function_name:
        raise ValueError(f"LEDGER_APP must look like 'module:function', got {app!r}")
    ledger = getattr(importlib.import_module(module_name), function_name)()
    if not isinstance(ledger, StreamingLedger):
        raise TypeError(f"{app} returned {type(ledger).__name__}, not a StreamingLedger")
    ledger.check()
    return ledger
