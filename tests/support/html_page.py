"""Reading an HTML page in tests: its elements, its tables' rows and its text, as a person
would read them (the audit report's tests)."""

from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path


@dataclass
class Element:
    """One element of a page: its tag, its attributes and where it stands."""

    tag: str
    attrs: dict[str, str]
    inside: tuple[str, ...]  # the ids of the elements around it


class Page(HTMLParser):
    """A page parsed into its elements, its tables' rows (by table id) and its text."""

    VOID = frozenset({"meta", "br", "img", "input", "link", "hr", "col", "wbr", "source"})

    def __init__(self, markup: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[Element] = []
        self.tables: dict[str, list[list[str]]] = {}  # every row: head, body and foot
        self.bodies: dict[str, list[list[str]]] = {}  # the rows of each table's <tbody>
        self.texts: list[str] = []
        self._placed: list[tuple[tuple[str, ...], str]] = []  # (ids around it, text)
        self.json_data = ""  # the text of <script id="report-data">
        self._open: list[tuple[str, str | None]] = []  # (tag, id) of the open elements
        self._cell: list[str] | None = None
        self.feed(markup)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = {key: value or "" for key, value in attrs}
        ids = tuple(i for _, i in self._open if i)
        self.elements.append(Element(tag, named, ids))
        table = next((i for t, i in reversed(self._open) if t == "table"), None)
        if tag == "tr" and table:
            self.tables.setdefault(table, []).append([])
            if any(t == "tbody" for t, _ in self._open):
                self.bodies.setdefault(table, []).append(self.tables[table][-1])
        if tag in ("td", "th") and table:
            self._cell = []
        if tag not in self.VOID:
            self._open.append((tag, named.get("id")))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            table = next(i for t, i in reversed(self._open) if t == "table")
            self.tables[table][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        while self._open:
            if self._open.pop()[0] == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._open and self._open[-1][1] == "report-data":
            self.json_data += data
        self.texts.append(data)
        self._placed.append((tuple(i for _, i in self._open if i), data))

    @property
    def text(self) -> str:
        return " ".join(" ".join(self.texts).split())

    def text_in(self, element_id: str) -> str:
        """The text of the element of id `element_id` (with its children's), as a browser
        shows it: its pieces run on as the markup has them, runs of white space read as one."""
        found = [data for around, data in self._placed if element_id in around]
        return " ".join("".join(found).split())

    def find(self, tag: str, *, inside: str | None = None, cls: str | None = None) -> list[Element]:
        """The elements `tag`, optionally only those inside the element of id `inside`, or of
        class `cls`."""
        return [
            e
            for e in self.elements
            if e.tag == tag
            and (inside is None or inside in e.inside)
            and (cls is None or cls in e.attrs.get("class", "").split())
        ]

    def body_rows(self, table: str) -> list[list[str]]:
        """The rows of the table's body (not its head, not its foot)."""
        return self.bodies.get(table, [])


def read_page(path: Path) -> Page:
    """The page written at `path`, parsed."""
    return Page(path.read_text(encoding="utf-8"))
