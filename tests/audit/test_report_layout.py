"""The pages as a person sees them, in Chromium at the widths people use (800 px: a laptop's
half screen, or Airflow's frame beside its side bar; 1440 px: a desktop): the audit report,
the index of every page, a reconciliation's page and the breaks workbench's queue, each as a
busy ledger writes it (tests/support/report_pages.py).

Nothing scrolls sideways and nothing is cut off: a total past a BIGINT shows every digit in
its tile; an account id is never broken across lines; the throughput chart labels every batch
of a small run, and a long run's batches by a rule (the first and the last, and evenly
between, no two labels overlapping). The pages take Airflow's own look (they are shown in
its frame): its fonts and its colours, light and dark, read here from the UI Airflow ships
(tests/support/airflow_look.py), never written down a second time. Screenshots are kept in
`test-artifacts/report-layout/` for a person to look at.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import pairwise
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from ledger_engine.config import PROJECT_ROOT
from tests.support import report_pages
from tests.support.airflow_look import airflow_look
from tests.support.page_layout import (
    NARROW,
    WIDE,
    as_computed,
    axis_labels,
    chromium,
    column_lines,
    computed,
    computed_all,
    framed,
    open_page,
    open_url,
    scrolling_boxes,
    served_folder,
    sideways,
    spilling,
    squeezed_cells,
)
from tests.support.workbench import served_workbench

ARTIFACTS = PROJECT_ROOT / "test-artifacts" / "report-layout"
PAGES: dict[str, Callable[[Path], Path]] = {
    "audit report": report_pages.audit_page,
    "index": report_pages.index_page,
    "reconciliation": report_pages.reconciliation_page,
    "breaks queue": report_pages.queue_page,
}
Show = Callable[..., Page]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as running:
        yield running


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each page, written once for the module."""
    folder = tmp_path_factory.mktemp("pages")
    return {name: write(folder / name.replace(" ", "-")) for name, write in PAGES.items()}


@pytest.fixture(scope="module")
def show(browser: Browser, written: dict[str, Path]) -> Iterator[Show]:
    """`show(name, width, dark=False)`: the page `name` in a window `width` wide, opened once
    for the module (the tests only read it); its screenshot is kept."""
    opened: dict[tuple[str, int, bool], Page] = {}

    def shown(name: str, width: int, *, dark: bool = False) -> Page:
        if (name, width, dark) not in opened:
            page = open_page(browser, written[name], width, dark=dark)
            opened[name, width, dark] = page
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            scheme = "-dark" if dark else ""
            shot = ARTIFACTS / f"{name.replace(' ', '-')}-{width}{scheme}.png"
            page.screenshot(path=str(shot), full_page=True)
        return opened[name, width, dark]

    yield shown
    for page in opened.values():
        page.context.close()


# --- Nothing scrolls sideways, nothing is cut off ----------------------------------------------


@pytest.mark.parametrize("name", PAGES)
def test_in_a_narrow_window_no_page_scrolls_sideways_or_cuts_anything_off(
    show: Show, name: str
) -> None:
    page = show(name, NARROW)

    assert sideways(page) == []


@pytest.mark.parametrize("name", PAGES)
def test_in_a_wide_window_every_column_of_every_table_shows(show: Show, name: str) -> None:
    page = show(name, WIDE)

    assert sideways(page) == []
    assert scrolling_boxes(page) == []  # no table scrolls in its own box, hiding columns


@pytest.mark.parametrize("width", [NARROW, WIDE])
@pytest.mark.parametrize("name", PAGES)
def test_no_column_is_squeezed_to_a_sliver(show: Show, name: str, width: int) -> None:
    page = show(name, width)

    assert squeezed_cells(page) == []


@pytest.mark.parametrize("width", [NARROW, WIDE])
def test_a_total_past_a_bigint_shows_every_digit_in_its_tile(show: Show, width: int) -> None:
    page = show("audit report", width)

    tile = page.locator("#figures [data-table='accounts']")
    assert " ".join(tile.inner_text().split()).startswith(
        f"accounts total {report_pages.HUGE_TOTAL_TEXT}"
    )
    assert spilling(page, ".tile, .tile *") == []


@pytest.mark.parametrize("width", [NARROW, WIDE])
@pytest.mark.parametrize("name", ["reconciliation", "breaks queue"])
def test_an_account_id_is_never_broken_across_lines(show: Show, name: str, width: int) -> None:
    page = show(name, width)

    cells = column_lines(page, "account")
    assert {text for _, text, _ in cells} >= set(report_pages.ACCOUNTS[:8])
    assert [cell for cell in cells if cell[2] != 1] == []


# --- The throughput chart's axis ---------------------------------------------------------------


def test_the_throughput_chart_labels_every_batch_of_a_small_run(show: Show) -> None:
    page = show("audit report", NARROW)

    batches = range(report_pages.SMALL_RUN)
    assert axis_labels(page, "throughput-chart") == [str(b) for b in batches]


@pytest.mark.parametrize("batches", [24, 137])
def test_a_long_runs_axis_labels_the_first_and_last_batch_and_evenly_between(
    browser: Browser, tmp_path: Path, batches: int
) -> None:
    page = open_page(browser, report_pages.audit_page(tmp_path, batches), NARROW)
    try:
        labels = [int(label) for label in axis_labels(page, "throughput-chart")]
        overlapping = page.evaluate(_OVERLAPPING_LABELS, "throughput-chart")
    finally:
        page.context.close()

    assert labels[0] == 0 and labels[-1] == batches - 1
    steps = {b - a for a, b in pairwise(labels[:-1])}
    assert len(steps) == 1 and steps <= {1, 2, 5, 10, 20, 50, 100}  # one round step
    assert 0 < labels[-1] - labels[-2] < 2 * steps.pop()  # the last closes the row
    assert overlapping == []


@pytest.mark.parametrize("width", [NARROW, WIDE])
@pytest.mark.parametrize("name", ["audit report", "reconciliation"])
def test_a_charts_text_keeps_its_size_at_every_width(show: Show, name: str, width: int) -> None:
    page = show(name, width)

    scales = page.eval_on_selector_all(".chart svg", "found => found.map(s => s.getScreenCTM().a)")
    assert scales and all(scale == pytest.approx(1, abs=0.02) for scale in scales)


def test_the_match_rate_chart_says_each_rate_as_the_table_does(show: Show) -> None:
    page = show("reconciliation", NARROW)

    rows = page.eval_on_selector_all(
        "#match-rate-table tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
    )
    drawn = page.eval_on_selector("#match-rate-chart", "box => box.textContent")
    said = [f"{rate} of {considered}" for _, _, _, considered, rate in rows]
    assert said == ["97.3% of 3,372", "97.0% of 3,380"]  # 3,280 of each: 97.27% and 97.04%
    assert all(words in drawn for words in said)


# Pairs of text labels of a chart whose boxes overlap.
_OVERLAPPING_LABELS = """(box) => {
  const boxes = [...document.getElementById(box).querySelectorAll("text")]
    .map((t) => [t.textContent, t.getBoundingClientRect()]);
  const found = [];
  boxes.forEach(([a, r], i) => boxes.slice(i + 1).forEach(([b, s]) => {
    if (r.left < s.right && s.left < r.right && r.top < s.bottom && s.top < r.bottom)
      found.push(`${a} / ${b}`);
  }));
  return found;
}"""


# --- Airflow's look ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", PAGES)
def test_each_page_is_set_in_airflows_fonts_and_colours(show: Show, name: str) -> None:
    look = airflow_look()
    page = show(name, WIDE)

    assert computed(page, "body", "font-family") == as_computed(page, "font-family", look.body_font)
    assert computed(page, "body", "color") == as_computed(page, "color", look.color("fg"))
    assert computed(page, "body", "background-color") == as_computed(
        page, "color", look.color("bg")
    )
    assert computed_all(page, "a", "color") == {as_computed(page, "color", look.color("fg.info"))}
    # Code (a command, a DAG run, a hash) in Airflow's monospace, where a page shows some.
    assert computed_all(page, "code, .hash", "font-family") <= {
        as_computed(page, "font-family", look.mono_font)
    }


def test_the_charts_and_the_primary_buttons_are_airflows_brand_colour(show: Show) -> None:
    look = airflow_look()
    brand = look.color("brand.solid")
    audit, queue = show("audit report", WIDE), show("breaks queue", WIDE)

    assert computed(audit, "#throughput-chart polyline", "stroke") == as_computed(
        audit, "color", brand
    )
    assert computed(queue, "button.primary", "background-color") == as_computed(
        queue, "color", brand
    )
    assert computed(queue, "button.primary", "color") == as_computed(queue, "color", "white")


def test_the_workbenchs_controls_are_drawn_as_airflows_not_the_systems(show: Show) -> None:
    look = airflow_look()
    queue = show("breaks queue", WIDE)

    assert computed_all(queue, "select", "appearance") == {"none"}  # its chevron, its border
    assert computed_all(queue, "input[type=checkbox]", "accent-color") == {
        as_computed(queue, "color", look.color("brand.solid"))
    }


@pytest.mark.parametrize("name", PAGES)
def test_in_airflows_dark_mode_each_page_takes_its_dark_colours(show: Show, name: str) -> None:
    look = airflow_look()
    page = show(name, NARROW, dark=True)

    for selector, prop, token in [
        ("body", "background-color", "bg"),
        ("body", "color", "fg"),
        ("a", "color", "fg.info"),
    ]:
        assert computed(page, selector, prop) == as_computed(
            page, "color", look.color(token, dark=True)
        ), f"{selector} {prop}"
    assert sideways(page) == []


# Airflow's UI showing a page in its frame, in the colour mode the user chose in Airflow (as
# Airflow sets it: a class and the color-scheme of its root), which may not be the system's.
AIRFLOW_FRAME = """<!doctype html>
<html class="{mode}" style="color-scheme: {mode}"><body style="margin: 0">
<iframe src="{page}" style="width: 100%; height: 900px; border: 0"></iframe>
</body></html>"""


@pytest.mark.parametrize(("airflow", "system"), [("dark", "light"), ("light", "dark")])
@pytest.mark.parametrize("name", PAGES)
def test_in_airflows_frame_a_page_takes_the_mode_airflow_shows(
    browser: Browser, written: dict[str, Path], name: str, airflow: str, system: str
) -> None:
    look = airflow_look()
    folder = written[name].parent
    frame_page = folder / f"airflow-{airflow}.html"
    frame_page.write_text(AIRFLOW_FRAME.format(mode=airflow, page=written[name].name))
    with served_folder(folder) as url:
        page = open_url(browser, f"{url}/{frame_page.name}", NARROW, dark=system == "dark")
        try:
            shown = framed(page)
            assert computed(shown, "body", "background-color") == as_computed(
                shown, "color", look.color("bg", dark=airflow == "dark")
            )
            # The user switches Airflow's mode: the page follows.
            page.evaluate(
                "mode => { const root = document.documentElement;"
                " root.className = mode; root.style.colorScheme = mode; }",
                system,
            )
            page.wait_for_timeout(100)
            assert computed(shown, "body", "background-color") == as_computed(
                shown, "color", look.color("bg", dark=system == "dark")
            )
        finally:
            page.context.close()


def test_the_workbench_as_served_fits_and_takes_airflows_look(
    browser: Browser, database_url: str, tmp_path: Path
) -> None:
    """The queue and a break's page as the workbench serves them (Airflow's auth manager, a
    real reconciliation's breaks; tests/support/workbench.py), each opened from its file."""
    look = airflow_look()
    with served_workbench(database_url, tmp_path) as bench:
        served = {
            "served-queue": bench.get("/ledger/breaks").text,
            "served-break": bench.get(f"/ledger/breaks/{min(bench.breaks.values())}").text,
        }
    for name, markup in served.items():
        (tmp_path / f"{name}.html").write_text(markup, encoding="utf-8")
        for width in (NARROW, WIDE):
            page = open_page(browser, tmp_path / f"{name}.html", width)
            try:
                page.screenshot(path=str(ARTIFACTS / f"{name}-{width}.png"), full_page=True)
                assert sideways(page) == [], (name, width)
                assert computed(page, "body", "font-family") == as_computed(
                    page, "font-family", look.body_font
                )
                assert computed(page, "button.primary", "background-color") == as_computed(
                    page, "color", look.color("brand.solid")
                )
            finally:
                page.context.close()
