"""The project's documents stand alone and say what is there: every link and every file name in
the README, docs/, the benchmark's studies and the expectations' README is a file (or heading)
of this repository, never a path out of it; the README is one screen to a first success, whose
two commands exist and whose test command is the one CI runs; the page of commands names every
command the parser takes; every `ledger` command shown parses; and the engine contract's points
that the code names exist. Read from the files, no database.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from ledger_engine.cli import build_parser
from ledger_engine.config import PROJECT_ROOT
from tests.support.documented import (
    anchors,
    comment_references,
    file_references,
    ledger_commands,
    links,
    repository_files,
    shell_blocks,
)

README = PROJECT_ROOT / "README.md"
DOCS = PROJECT_ROOT / "docs"
CONTRACT = DOCS / "contract.md"
COMMANDS = DOCS / "commands.md"
CI = PROJECT_ROOT / ".ci" / "run"

# A README a person reads to a first success without scrolling: a laptop's terminal or editor
# shows 50 to 60 lines, and GitHub draws a README's blank lines and fences shorter than their
# source; 80 lines of source hold what it is, the two commands with what they need, what to do
# next and the map of docs/, and nothing more.
README_LINES = 80

# Folders the documents name that are made at run time, never committed: the data folder, the
# tests' screenshots, the benchmark's results, Great Expectations' generated output.
GENERATED = ("var/", "test-artifacts/", "bench/results/", "uncommitted/", "gx/uncommitted")
# Names written as code that are no file of this repository, each with why it is written.
NOT_HERE = {
    "plugins/custom_data_docs/views/": "Great Expectations' own folder of templates, which the "
    "expectations' README says this project does not use",
    "sql/00xx": "a planned migration in the journal-writes study, before it had a number",
    "pyarrow.csv": "pyarrow's CSV module, not a file",
    "store/batch_reads.CommittedRows": "a class, named by its module",
}
# Modules the dated studies of bench/studies/ measured, since replaced: a study records what
# was measured then, so its names stay as written.
REMOVED = {
    "audit/last_changes.py": "the batch audit's pointers, replaced by change links (sql/0025)",
    "audit/runner.py": "the audit runner, now ledger_engine/tasks/audit_runs.py",
    "spark/postgres.py": "the Spark tasks' PostgreSQL access, now ledger_engine/store/",
    "spark/batch.py": "the row-per-event Spark batch, replaced by the columnar engine",
    "spark/execution.py": "the row-per-event executor, replaced by the columnar engine",
    "execution.py": "spark/execution.py, as the studies name it for short",
    "codec.py": "the row-per-event codec, replaced by columnar/parcels.py",
    "postgres.py": "spark/postgres.py, as the studies name it for short",
}
# Folders of no document's concern: git's, the virtualenv, generated output, caches.
SKIPPED = frozenset(
    {".git", ".venv", "var", "test-artifacts", "__pycache__", ".ruff_cache", ".pytest_cache"}
)


def documents() -> list[Path]:
    """The documents a person reads in the repository."""
    found = [README, PROJECT_ROOT / "expectations" / "README.md"]
    found += sorted(DOCS.rglob("*.md")) + sorted((PROJECT_ROOT / "bench" / "studies").glob("*.md"))
    return found


def _files() -> tuple[set[str], set[str]]:
    files = {str(path) for path in repository_files(PROJECT_ROOT, SKIPPED)}
    folders = {str(parent) for name in files for parent in Path(name).parents}
    return files, folders - {"."}


FILES, FOLDERS = _files()
TOP_LEVEL = {path.name for path in PROJECT_ROOT.iterdir()}


def _named(name: str, document: Path) -> bool:
    """Whether `name`, as `document` writes it, is a file or folder here: from the root or the
    document's folder, as the tail of a path (`audit/proof/chain.py`), or a migration by its
    number (`sql/0024`)."""
    name = name.rstrip("/")
    here = str(document.parent.relative_to(PROJECT_ROOT) / name)
    return (
        bool({name, here} & (FILES | FOLDERS))
        or any(path.endswith("/" + name) for path in FILES | FOLDERS)
        or any(path.startswith(name + "_") for path in FILES)
    )


def _is_file_name(name: str) -> bool:
    """Whether a code span names a file: a known extension, a folder (`sql/`), or a path from a
    folder of the repository's root (`sql/0024`); not a unit like `EUR/2`."""
    return "." in Path(name).name or name.endswith("/") or name.split("/")[0] in TOP_LEVEL


def unresolved_names(document: Path, allowed: dict[str, str]) -> list[str]:
    """The file names `document` writes that are no file of this repository."""
    return [
        name
        for name in file_references(document.read_text(encoding="utf-8"))
        if _is_file_name(name)
        and not any(part in name for part in GENERATED)
        and name not in allowed
        and not _named(name, document)
    ]


def broken_links(document: Path, text: str | None = None) -> list[str]:
    """The links of `document` (or of `text`, read as if it lay there) that lead out of the
    repository or to no file or heading."""
    broken = []
    for target in links(document.read_text(encoding="utf-8") if text is None else text):
        if re.match(r"^[a-z]+:", target):
            continue  # a web address: no clone lacks it
        path, _, fragment = target.partition("#")
        file = (document.parent / path).resolve() if path else document
        inside = file.is_relative_to(PROJECT_ROOT.resolve()) and file.exists()
        if not inside or (fragment and fragment not in anchors(file.read_text(encoding="utf-8"))):
            broken.append(target)
    return broken


@pytest.mark.parametrize("document", documents(), ids=lambda p: str(p.relative_to(PROJECT_ROOT)))
def test_every_link_of_a_document_is_a_file_or_heading_of_the_repository(document: Path) -> None:
    assert broken_links(document) == []


@pytest.mark.parametrize("document", documents(), ids=lambda p: str(p.relative_to(PROJECT_ROOT)))
def test_every_file_a_document_names_is_in_the_repository(document: Path) -> None:
    allowed = NOT_HERE | (REMOVED if document.parent.name == "studies" else {})
    assert unresolved_names(document, allowed) == []


CONFIGURATIONS = [PROJECT_ROOT / "docker-compose.yml", *sorted((PROJECT_ROOT / "docker").glob("*"))]


@pytest.mark.parametrize("file", CONFIGURATIONS, ids=lambda p: str(p.relative_to(PROJECT_ROOT)))
def test_every_document_a_configuration_file_names_is_in_the_repository(file: Path) -> None:
    """The compose file's and the Dockerfiles' comments send the reader to files that exist."""
    named = comment_references(file.read_text(encoding="utf-8"))
    assert [name for name in named if not _named(name, file)] == []


def test_the_names_allowed_unresolved_are_still_written_and_still_absent() -> None:
    """The lists above cannot hide a name that came back or that no document writes any more."""
    written = {name for doc in documents() for name in file_references(doc.read_text("utf-8"))}
    for name in NOT_HERE | REMOVED:
        assert name in written, f"{name} is written nowhere: drop it from the list"
        assert not _named(name, README), f"{name} is a file again: drop it from the list"


def test_a_link_out_of_the_repository_and_a_made_up_path_are_found() -> None:
    """A control: the old README's link to ../shared/DESIGN.md and its path/to placeholder, a
    missing heading; a link to a heading that is there passes."""
    page = DOCS / "a-page-that-is-not-there.md"
    text = (
        "[the contract](../../shared/DESIGN.md), [here](commands.md#no-such-heading),\n"
        "[there](operations.md#locally-with-ledger-airflow)\n"
        "`LEDGER_APP=path/to/simple_trade.py` and `path/to/simple_trade.py`\n"
        "```bash\nLEDGER_APP=path/to/simple_trade.py:build_ledger ledger demo\n```\n"
    )
    assert broken_links(page, text) == ["../../shared/DESIGN.md", "commands.md#no-such-heading"]
    assert file_references(text) == ["path/to/simple_trade.py", "path/to/simple_trade.py"]
    assert not _named("path/to/simple_trade.py", page)
    assert _named("tests/support/apps/simple_trade.py", page)


def test_the_readme_is_one_screen() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_LINES, f"README.md has {len(lines)} lines"


def readme_commands() -> list[str]:
    """The README's two commands, in its order: the demo's, then the tests'."""
    return [
        line
        for line in shell_blocks(README.read_text(encoding="utf-8")).splitlines()
        if line.startswith("bash scripts/")
    ]


def test_the_readme_commands_exist_and_ci_runs_its_test_command() -> None:
    demo, tests = readme_commands()
    for command in (demo, tests):
        assert (PROJECT_ROOT / command.split()[1]).is_file(), command
    assert "ledger demo" in (PROJECT_ROOT / demo.split()[1]).read_text(encoding="utf-8")
    assert "pytest" in (PROJECT_ROOT / tests.split()[1]).read_text(encoding="utf-8")
    ci = CI.read_text(encoding="utf-8").splitlines()
    ci_commands = [line for line in ci if "scripts/" in line]
    assert ci_commands == [f'exec {tests} "$@"']


def every_command(parser: argparse.ArgumentParser, prefix: str = "ledger") -> list[str]:
    """Every command `parser` takes, as a person types it: subcommands, and the choices of a
    command's first positional argument (`ledger db migrate`)."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                below = every_command(sub, f"{prefix} {name}")
                if not any(a.choices and a.required and not a.option_strings for a in sub._actions):
                    found.append(f"{prefix} {name}")  # a command of its own, not only a prefix
                found += below
        elif not action.option_strings and action.choices and prefix != "ledger":
            found += [f"{prefix} {choice}" for choice in action.choices]
            break
    return found


def test_the_commands_page_names_every_command() -> None:
    page = COMMANDS.read_text(encoding="utf-8")
    shown = {m.group(1).rstrip() for m in re.finditer(r"`(ledger(?: [a-z][a-z-]*)+)", page)}
    commands = every_command(build_parser())
    assert "ledger db migrate" in commands and "ledger breaks write-off" in commands
    assert [command for command in commands if command not in shown] == []


def test_every_ledger_command_a_document_shows_parses() -> None:
    """Every `ledger` command of a shell block parses (the reconciliation walk-through's and
    the compose setup's among them)."""
    shown = [
        (document.name, args)
        for document in [README, *sorted(DOCS.rglob("*.md"))]
        for args in ledger_commands(shell_blocks(document.read_text(encoding="utf-8")))
    ]
    for wanted in (
        ["statements", "sample", "--source", "Main bank", "--accounts", "3"],
        ["statements", "land", "/tmp/nov-04.xml", "--source", "Main bank"],
        ["statements"],
        ["reconcile"],
        ["db", "stop"],
    ):
        assert wanted in [args for _, args in shown]
    for document, args in shown:
        parsed, extra = build_parser().parse_known_args(args)
        assert extra == [] or parsed.command == "psql", (document, args)


def test_every_page_of_docs_is_reached_from_the_readme() -> None:
    reached, todo = set(), [README]
    while todo:
        page = todo.pop()
        for target in links(page.read_text(encoding="utf-8")):
            file = (page.parent / target.partition("#")[0]).resolve()
            if file.suffix == ".md" and file.exists() and file not in reached:
                reached.add(file)
                todo.append(file)
    assert [p for p in sorted(DOCS.rglob("*.md")) if p.resolve() not in reached] == []


def contract_points() -> set[int]:
    """The numbers of the engine contract's points (`N. **Name.**` in docs/contract.md)."""
    text = CONTRACT.read_text(encoding="utf-8")
    return {int(n) for n in re.findall(r"^(\d+)\. \*\*", text, flags=re.M)}


NAMED_POINT = re.compile(r"docs/contract\.md,\s+points?\s+(\d+)(?:\s+to\s+(\d+))?")


def points_named_in_code() -> list[tuple[str, int]]:
    """Every contract point the code names (`docs/contract.md, point 7`, `points 3 to 7`)."""
    named = []
    for folder in ("ledger_engine", "tests", "bench", "dags"):
        for path in sorted((PROJECT_ROOT / folder).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if path == Path(__file__):
                continue  # its own docstring names a point as an example
            for found in NAMED_POINT.finditer(text):
                first, last = int(found.group(1)), int(found.group(2) or found.group(1))
                named += [(str(path.relative_to(PROJECT_ROOT)), n) for n in range(first, last + 1)]
    return named


def test_every_contract_point_the_code_names_exists() -> None:
    named = points_named_in_code()
    assert len(named) >= 9, "the code names the contract's points"
    points = contract_points()
    assert [(path, n) for path, n in named if n not in points] == []


def test_no_source_sends_the_reader_to_a_design_file_outside_the_repository() -> None:
    outside = re.compile(r"\bDESIGN\.md|\.\./shared")
    found = [
        str(path.relative_to(PROJECT_ROOT))
        for folder in ("ledger_engine", "tests", "bench", "dags", "docs", "expectations", "docker")
        for path in sorted((PROJECT_ROOT / folder).rglob("*"))
        if path.suffix in {".py", ".md", ".toml", ".sql", ".yml", ".Dockerfile"}
        and path != Path(__file__)
        and outside.search(path.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_the_contract_example_runs_as_shown() -> None:
    text = CONTRACT.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    assert blocks, "the contract shows a Python example"
    exec(compile(blocks[0], "docs/contract.md", "exec"), {})  # its own asserts check the result
