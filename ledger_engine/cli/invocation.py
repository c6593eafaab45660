"""How a person types the `ledger` command again here, for the hints commands print: `ledger`
where the PATH finds this very script, else the path it was run by (`.venv/bin/ledger` from the
project's folder, as the README's set-up leaves it), or `python -m ledger_engine.cli`."""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path


def invoked_as(argv0: str | None = None) -> str:
    """The command that runs `ledger` again from the working folder, as it was run now."""
    script = Path(sys.argv[0] if argv0 is None else argv0)
    if script.name == "__main__.py":  # python -m ledger_engine.cli
        return f"{_typed(Path(sys.executable))} -m ledger_engine.cli"
    on_path = shutil.which(script.name)
    if on_path is not None and Path(on_path).resolve() == script.resolve():
        return script.name
    return _typed(script)


def _typed(path: Path) -> str:
    """`path` as typed from the working folder: relative inside it (never resolving a link:
    a virtualenv's bin holds links), absolute outside; quoted for the shell."""
    absolute = path.absolute()
    try:
        relative = absolute.relative_to(Path.cwd())
    except ValueError:
        return shlex.quote(str(absolute))
    typed = str(relative)
    return shlex.quote(typed if "/" in typed else f"./{typed}")
