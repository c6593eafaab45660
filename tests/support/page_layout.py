"""How a page is laid out in a real browser: headless Chromium (Debian's, driven by Playwright,
which downloads nothing) opens a page in a window of a given width and measures what a person
would see: whether anything scrolls sideways, whether a box cuts its text off, on how many
lines a cell's text is set, which labels a chart's axis carries, and the styles computed for
an element.

    with chromium() as browser:
        shown = open_page(browser, path, width=800)
        assert sideways(shown) == []
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Frame, Page, sync_playwright

from tests.support.browser import CHROMIUM

# Window widths people use: a laptop with Airflow's side bar and a half screen, and a desktop.
NARROW, WIDE = 800, 1440


@contextlib.contextmanager
def chromium() -> Iterator[Browser]:
    """Headless Chromium, closed at the end."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (scripts/test.sh does)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


def open_page(browser: Browser, path: Path, width: int, *, dark: bool = False) -> Page:
    """`path` shown in a window `width` pixels wide (900 high), its scripts run, in the light
    or the dark colour scheme. The caller closes it (`page.context.close()`)."""
    return open_url(browser, path.as_uri(), width, dark=dark)


def open_url(browser: Browser, url: str, width: int, *, dark: bool = False) -> Page:
    """The page at `url`, as `open_page` shows a file."""
    context = browser.new_context(
        viewport={"width": width, "height": 900}, color_scheme="dark" if dark else "light"
    )
    page = context.new_page()
    page.goto(url)
    page.wait_for_load_state("load")
    return page


# What is wider than its box: the document itself (`document`), each box that cuts its content
# off (overflow hidden or clip, or an ellipsis: `clipping`), each box with a scroll bar of its
# own (overflow auto or scroll: `scrolling`).
_WIDER = """() => {
  const name = (e) => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "")
    + (typeof e.className === "string" && e.className
       ? "." + e.className.split(" ").join(".") : "");
  const found = { document: [], clipping: [], scrolling: [] };
  const root = document.documentElement;
  if (root.scrollWidth > root.clientWidth)
    found.document.push(`the document: ${root.scrollWidth} px wide in ${root.clientWidth}`);
  for (const e of document.body.querySelectorAll("*")) {
    const style = getComputedStyle(e);
    if (style.display === "none" || style.display === "inline") continue;
    if (e.scrollWidth <= e.clientWidth + 1) continue;
    const what = `${name(e)}: ${e.scrollWidth} px in ${e.clientWidth}`;
    if (["auto", "scroll"].includes(style.overflowX)) found.scrolling.push(what);
    else if (style.overflowX !== "visible" || style.textOverflow === "ellipsis")
      found.clipping.push(what);
  }
  return found;
}"""


def sideways(page: Page) -> list[str]:
    """What makes a person scroll `page` sideways or hides part of it: the document wider than
    the window, a box that cuts its content off (one line each; none: all of it fits)."""
    wider = page.evaluate(_WIDER)
    return wider["document"] + wider["clipping"]


def scrolling_boxes(page: Page) -> list[str]:
    """The boxes of `page` that scroll sideways on their own (a table wider than its place),
    one line each."""
    return page.evaluate(_WIDER)["scrolling"]


# Each element matching the selector whose content is wider than its box: its text runs
# past its edge (into its neighbour, or hidden).
_SPILLING = """(selector) => [...document.querySelectorAll(selector)]
  .filter((e) => e.scrollWidth > e.clientWidth + 1)
  .map((e) => `${e.textContent.trim()}: ${e.scrollWidth} px in ${e.clientWidth}`)"""


def spilling(page: Page, selector: str) -> list[str]:
    """The elements of `selector` whose content does not fit their width."""
    return page.evaluate(_SPILLING, selector)


# The lines each cell of a column (by its heading) is set on: the distinct tops of its text's
# line boxes.
_COLUMN_LINES = """(heading) => {
  const lines = (cell) => {
    const range = document.createRange();
    range.selectNodeContents(cell);
    const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
    return tops.size;
  };
  const found = [];
  for (const table of document.querySelectorAll("table")) {
    const heads = [...table.querySelectorAll("thead th")];
    const at = heads.findIndex((th) => th.textContent.trim().toLowerCase() === heading);
    if (at < 0) continue;
    for (const row of table.querySelectorAll("tbody tr")) {
      const cell = row.children[at];
      if (cell && cell.textContent.trim())
        found.push([table.id || table.getAttribute("aria-label") || "table",
                    cell.textContent.trim(), lines(cell)]);
    }
  }
  return found;
}"""


# Each table cell holding a long word (over 20 characters: a run id, a file name, a reference,
# which may break anywhere) whose lines hold fewer than `chars` characters on average: its
# column was squeezed to a sliver, and the word is set a few letters a line.
_SQUEEZED = """(chars) => [...document.querySelectorAll("td, th")].flatMap((cell) => {
  const text = cell.textContent.trim().replace(/\\s+/g, " ");
  if (!text.split(" ").some((word) => word.length > 20)) return [];
  const range = document.createRange();
  range.selectNodeContents(cell);
  const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size;
  return lines > 1 && text.length / lines < chars
    ? [`${text.slice(0, 40)}: ${lines} lines of ${text.length} characters`] : [];
})"""


def squeezed_cells(page: Page, chars: int = 12) -> list[str]:
    """The table cells of `page` holding a long word set fewer than `chars` characters a
    line, one line each."""
    return page.evaluate(_SQUEEZED, chars)


def column_lines(page: Page, heading: str) -> list[tuple[str, str, int]]:
    """(table, text, lines) for each cell of each table's column headed `heading` (any case)."""
    return [tuple(row) for row in page.evaluate(_COLUMN_LINES, heading.lower())]


# The numbers a chart draws under its plot: text whose top is below every point drawn.
_AXIS_LABELS = """(box) => {
  const chart = document.getElementById(box);
  const marks = [...chart.querySelectorAll("line, circle, polyline, rect")];
  const bottom = Math.max(...marks.map((m) => m.getBoundingClientRect().bottom));
  return [...chart.querySelectorAll("text")]
    .filter((t) => /^[0-9][0-9,]*$/.test(t.textContent.trim()))
    .filter((t) => t.getBoundingClientRect().top > bottom)
    .map((t) => t.textContent.trim());
}"""


def axis_labels(page: Page, chart: str) -> list[str]:
    """The numbers the chart `chart` (its box's id) labels its horizontal axis with."""
    return page.evaluate(_AXIS_LABELS, chart)


def computed(page: Page | Frame, selector: str, prop: str) -> str:
    """The computed value of CSS property `prop` of the first element of `selector`."""
    style = "(e, p) => getComputedStyle(e).getPropertyValue(p)"
    return page.eval_on_selector(selector, style, prop)


def as_computed(page: Page | Frame, prop: str, value: str) -> str:
    """`value` of CSS property `prop` as the browser computes it (so that two ways of writing
    one colour or one font list compare equal)."""
    return page.evaluate(
        """([prop, value]) => {
          const probe = document.createElement("span");
          probe.style.setProperty(prop, value);
          document.body.appendChild(probe);
          const found = getComputedStyle(probe).getPropertyValue(prop);
          probe.remove();
          return found;
        }""",
        [prop, value],
    )


def computed_all(page: Page, selector: str, prop: str) -> set[str]:
    """The computed values of CSS property `prop` over every element of `selector`."""
    style = "(found, p) => found.map((e) => getComputedStyle(e).getPropertyValue(p))"
    return set(page.eval_on_selector_all(selector, style, prop))


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """Says nothing: a test's output is its own."""


@contextlib.contextmanager
def served_folder(folder: Path) -> Iterator[str]:
    """`folder` served over HTTP on 127.0.0.1 (its files, as a web server would), for pages
    that must share an origin with the page that frames them; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def framed(page: Page) -> Frame:
    """The one frame a page frames (Airflow's UI frames the ledger's pages)."""
    (inner,) = [frame for frame in page.frames if frame != page.main_frame]
    inner.wait_for_load_state("load")
    return inner
