"""The README's example runs as shown."""

from __future__ import annotations

import re

from ledger_engine.config import PROJECT_ROOT


def test_the_readme_python_example_runs() -> None:
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.DOTALL)
    assert blocks, "the README shows a Python example"
    exec(compile(blocks[0], "README.md", "exec"), {})  # its own asserts check the result
