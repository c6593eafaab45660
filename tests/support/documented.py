"""The `ledger` commands a document shows a person (the README, docker-compose.yml's header),
so that a test can hold them to the command's parser."""

from __future__ import annotations

import re
import shlex

# `ledger` as a person types it: on the path, from the virtualenv, or inside a container.
_LEDGER = re.compile(r"(?:^|\s)(?:\.venv/bin/)?ledger\s+(?=[a-z])")


def shell_blocks(markdown: str) -> str:
    """The text of every ```bash block of `markdown`, one after another."""
    return "\n".join(re.findall(r"^```bash\n(.*?)^```", markdown, flags=re.S | re.M))


def ledger_commands(text: str) -> list[list[str]]:
    """The arguments of every `ledger ...` command in `text`'s lines (a `#` comment line's
    too, a line ending with a backslash joined to the next, a trailing `# comment` left out)."""
    joined = re.sub(r"\\\n\s*#?\s*", " ", text)
    commands = []
    for line in joined.splitlines():
        found = _LEDGER.search(line)
        if found is None:
            continue
        words = shlex.split(line[found.end() :], comments=True)
        if words:
            commands.append(words)
    return commands
