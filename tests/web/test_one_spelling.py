"""Each word of the workbench is written once (issue 46, point 19): a break's states are named
in `reconcile.break_states` (the pages, the templates, the storage and the runs name them from
there, never as bare strings); the reasons the queue offers are matching's own list, in its
order; a note's limit is `config.NOTE_LIMIT`, handed to the templates; and the table of break
rows is one macro. Read from the source, nothing imported but the lists compared."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import ledger_engine
from ledger_engine import config
from ledger_engine.reconcile import break_states
from ledger_engine.reconcile.matching import BREAK_REASONS
from tests.support.workbench import Workbench, section

PACKAGE = Path(ledger_engine.__file__).parent
TEMPLATES = PACKAGE / "web" / "templates"
# The modules that work with a break's states: the pages, the storage and the runs.
MODULES = [
    *sorted((PACKAGE / "web").glob("*.py")),
    *(
        PACKAGE / "reconcile" / "storage" / f"{name}.py"
        for name in ("queue", "resolutions", "runs")
    ),
    *(PACKAGE / "reconcile" / f"{name}.py" for name in ("run", "resolve", "write_offs")),
]
STATES = {
    value for name, value in vars(break_states).items() if name.isupper() and isinstance(value, str)
} | {"applied", "rejected"}


def bare_states(source: str) -> list[tuple[int, str]]:
    """The string literals of `source` that are a state's word (line, word)."""
    return [
        (node.lineno, node.value)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and node.value in STATES
    ]


def test_the_reader_finds_a_bare_state() -> None:
    assert bare_states('if item.status == "open":\n    x = {"applied": 1}\n') == [
        (1, "open"),
        (2, "applied"),
    ]
    assert bare_states('"""The break is open."""\nOPEN_STATE = OPEN\n') == []


def test_no_module_names_a_state_but_break_states() -> None:
    found = {
        str(path.relative_to(PACKAGE)): bare_states(path.read_text(encoding="utf-8"))
        for path in MODULES
    }

    assert {path: words for path, words in found.items() if words} == {}


def test_no_template_names_a_state() -> None:
    quoted = re.compile(r"""["']({})["']""".format("|".join(sorted(STATES))))
    found = {
        path.name: quoted.findall(" ".join(re.findall(r"{[{%].*?[%}]}", path.read_text())))
        for path in sorted(TEMPLATES.glob("*.html"))
    }

    assert {name: words for name, words in found.items() if words} == {}


def test_no_template_writes_a_notes_limit_and_the_pages_give_config_s() -> None:
    written = {
        path.name: re.findall(r'maxlength="\d+"', path.read_text())
        for path in TEMPLATES.glob("*.html")
    }
    assert {name: limits for name, limits in written.items() if limits} == {}


def test_the_break_row_table_is_written_once() -> None:
    rows = {
        path.name: path.read_text().count('<td class="age">') for path in TEMPLATES.glob("*.html")
    }

    assert sum(rows.values()) == 1, rows


def test_the_queue_offers_matchings_reasons_in_its_order(bench: Workbench) -> None:
    queue = bench.get("/ledger/breaks").text
    choices = re.search(r'<select name="reason">(.*?)</select>', queue, re.S)
    assert choices

    assert re.findall(r'<option value="(\w+)"', choices[1]) == list(BREAK_REASONS)


def test_every_note_field_takes_config_s_limit(bench: Workbench) -> None:
    some = next(iter(bench.breaks.values()))
    pages = [bench.get("/ledger/breaks").text, bench.get(f"/ledger/breaks/{some}").text]
    limits = [
        int(n) for text in pages for n in re.findall(r'<textarea[^>]*maxlength="(\d+)"', text)
    ]

    assert len(limits) == 3 and set(limits) == {config.NOTE_LIMIT}
    assert section(pages[1], "Write off")
