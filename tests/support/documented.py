"""What the project's documents show a person (the README, docs/, docker-compose.yml's header):
the `ledger` commands, so that a test can hold them to the command's parser; and the links and
file names, so that a test can hold them to the repository's files and headings."""

from __future__ import annotations

import re
import shlex
import unicodedata
from collections.abc import Iterator
from pathlib import Path

# `ledger` as a person types it: on the path, from the virtualenv, or inside a container.
_LEDGER = re.compile(r"(?:^|\s)(?:\.venv/bin/)?ledger\s+(?=[a-z])")
_FENCE = re.compile(r"^```[^\n]*\n.*?^```", flags=re.S | re.M)
_LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
_CODE_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", flags=re.M)
# A file name as a document writes it: no space, no placeholder, a folder or a known extension.
_FILE_LIKE = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_./\-]*$")
_EXTENSIONS = (
    ".py", ".md", ".sql", ".sh", ".toml", ".yml", ".yaml", ".json", ".txt", ".png", ".cfg",
    ".properties", ".Dockerfile", ".xml", ".csv", ".README",
)  # fmt: skip
# A script or file a shell block runs or reads, and the file of `LEDGER_APP=file.py:function`.
_SHELL_FILE = re.compile(
    r"(?:^|[\s=])((?:\.{0,2}/)?[A-Za-z0-9_.\-]+/[A-Za-z0-9_./\-]*\.(?:py|sh|sql))\b"
)


_COMMENT_FILE = re.compile(r"(?<![\w/.:-])((?:[\w-]+/)*[\w.-]+\.(?:md|py|sh|sql|Dockerfile))\b")


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


def prose(markdown: str) -> str:
    """`markdown` without its fenced blocks (what is read as text, links and code spans)."""
    return _FENCE.sub("", markdown)


def links(markdown: str) -> list[str]:
    """The target of every link and image of `markdown`'s prose, as written."""
    return _LINK.findall(prose(markdown))


def file_references(markdown: str) -> list[str]:
    """The file and folder names `markdown` writes as code: every code span of its prose that
    reads as a path (a `/` or a known extension, no space, no placeholder), and every script or
    file its fenced blocks run or name (`bash scripts/demo.sh`, `LEDGER_APP=dir/app.py:fn`)."""
    found = []
    for span in _CODE_SPAN.findall(prose(markdown)):
        name = span.strip()
        if "://" in name or not _FILE_LIKE.match(name) or name.startswith("."):
            continue
        if "/" in name or name.endswith(_EXTENSIONS):
            found.append(name)
    for block in _FENCE.findall(markdown):
        found.extend(_SHELL_FILE.findall(block))
    return found


def comment_references(text: str) -> list[str]:
    """The documents and scripts the `#` comments of a configuration file name (a compose
    file's header, a Dockerfile's): `docs/operations.md`, `docker/airflow.Dockerfile`."""
    comments = "\n".join(re.findall(r"^\s*#(.*)$", text, flags=re.M))
    return _COMMENT_FILE.findall(comments)


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, markup and punctuation dropped, spaces
    as hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    kept = "".join(c for c in text if c in " -" or unicodedata.category(c)[0] in "LNM")
    return kept.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """Every heading anchor of `markdown` (a repeated heading's second is `name-1`, as GitHub
    numbers them)."""
    seen: dict[str, int] = {}
    found = set()
    for heading in _HEADING.findall(prose(markdown)):
        name = anchor(heading)
        count = seen.get(name, 0)
        seen[name] = count + 1
        found.add(name if count == 0 else f"{name}-{count}")
    return found


def repository_files(root: Path, skipped: frozenset[str]) -> Iterator[Path]:
    """Every file under `root` outside the folders named in `skipped` (the virtualenv, git's,
    generated output), relative to `root`."""
    for path in root.iterdir():
        if path.name in skipped:
            continue
        if path.is_dir():
            yield from (path.name / sub for sub in repository_files(path, frozenset()))
        else:
            yield Path(path.name)
