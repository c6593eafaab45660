"""The pages as a person sees them, in Chromium at the widths people use (800 px: a laptop's
half screen, or Airflow's frame beside its side bar; 1440 px: a desktop), each as a busy
ledger writes it (tests/support/report_pages.py): the throughput chart labels every batch of a
small run, and a long run's batches by a rule (the first and the last, and evenly between, no
two labels overlapping). Screenshots are kept in `test-artifacts/report-layout/` for a person
to look at.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import pairwise
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from ledger_engine.config import PROJECT_ROOT
from tests.support import report_pages
from tests.support.page_layout import (
    NARROW,
    axis_labels,
    chromium,
    open_page,
)

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


@pytest.fixture
def show(browser: Browser, written: dict[str, Path]) -> Iterator[Show]:
    """`show(name, width, dark=False)`: the page `name` in a window `width` wide; its
    screenshot is kept."""
    opened: list[Page] = []

    def shown(name: str, width: int, *, dark: bool = False) -> Page:
        page = open_page(browser, written[name], width, dark=dark)
        opened.append(page)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        scheme = "-dark" if dark else ""
        shot = ARTIFACTS / f"{name.replace(' ', '-')}-{width}{scheme}.png"
        page.screenshot(path=str(shot), full_page=True)
        return page

    yield shown
    for page in opened:
        page.context.close()


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
