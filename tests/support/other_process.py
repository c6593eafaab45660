"""A second Python process whose hash seed is not this one's, to call a function in.

A result that depends on the order of a set of text (or on anything else `PYTHONHASHSEED`
changes) comes out alike twice in one process, and differently in another: a test of
determinism compares what this process computes with what `OtherHashSeed.call` computes there.
The process is started once (`another_hash_seed`) and answers call after call; a function is
named by its module and name, and its arguments and result travel pickled.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]

# The other process: reads (module, name, args, kwargs) pickled from stdin until it closes, and
# answers each with (True, result) or (False, the traceback), pickled on what was stdout (what
# the function prints goes to stderr).
WORKER = """
import importlib, pickle, sys, traceback
answers, sys.stdout = sys.stdout.buffer, sys.stderr
while True:
    try:
        module, name, args, kwargs = pickle.load(sys.stdin.buffer)
    except EOFError:
        break
    try:
        answer = (True, getattr(importlib.import_module(module), name)(*args, **kwargs))
    except BaseException:
        answer = (False, traceback.format_exc())
    pickle.dump(answer, answers)
    answers.flush()
"""
SEED_LIMIT = 2**32  # PYTHONHASHSEED is 0 to 2**32 - 1


class OtherHashSeed:
    """The other process (see the module's docstring)."""

    def __init__(self, hash_seed: int) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=REPO_ROOT,
            env=os.environ | {"PYTHONHASHSEED": str(hash_seed)},
        )

    def call(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """What `function(*args, **kwargs)` returns in the other process; `function` must be
        found by its module and name there (a module's function, a builtin)."""
        assert self.process.stdin is not None and self.process.stdout is not None
        pickle.dump((function.__module__, function.__qualname__, args, kwargs), self.process.stdin)
        self.process.stdin.flush()
        try:
            done, answer = pickle.load(self.process.stdout)
        except EOFError:
            raise AssertionError(f"the other process ended ({self.process.wait()})") from None
        assert done, f"{function.__qualname__} failed in the other process:\n{answer}"
        return answer

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


@contextmanager
def another_hash_seed() -> Iterator[OtherHashSeed]:
    """The other process, started with a hash seed other than this process's (checked: the same
    text hashes differently there), stopped at the end."""
    ours = os.environ.get("PYTHONHASHSEED", "")
    seed = (int(ours) + 1) % SEED_LIMIT if ours.isdigit() else 1
    other = OtherHashSeed(seed)
    try:
        assert other.call(hash, "ledger") != hash("ledger"), "both processes hash text alike"
        yield other
    finally:
        other.close()
