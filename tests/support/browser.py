"""Opening a report page in a real browser: headless Chromium (Debian's `chromium`) loads the
page as a person's browser would, runs its script, and tells what the page became, what it
said on the console and which requests it made (the report's pages must make none: they work
offline, from their one file).

    shown = render(page, tmp_path, screenshot=ARTIFACTS / "page.png")
    assert shown.console == [] and shown.requests == [] and charts_drawn(shown)
"""

from __future__ import annotations

import json
import re
import struct
import subprocess
import zlib
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.html_page import Page

CHROMIUM = Path("/usr/bin/chromium")
CONSOLE_LINE = re.compile(r":CONSOLE[^\]]*\] \"(?P<message>.*)\", source: ")


@dataclass(frozen=True)
class Rendered:
    dom: Page  # the document after its scripts ran
    console: list[str]  # every console message: the report's script writes none
    requests: list[str]  # the URL of every network request the page made


def render(
    page: Path,
    scratch: Path,
    screenshot: Path | None = None,
    *,
    height: int = 2400,
    settle_ms: int | None = None,
    dark: bool = False,
) -> Rendered:
    """Open `page` in headless Chromium, in a window 1280 wide and `height` high (the
    screenshot's size): its DOM after the scripts ran, its console, and the network requests
    it made (from Chromium's net log). With `settle_ms`, the DOM is read that many (virtual)
    milliseconds after the page began loading rather than once it has loaded: time for what
    the page does after its load event (a webfont, a promise) to end. With `dark`, the page
    is shown in the dark colour scheme (`prefers-color-scheme: dark`)."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (scripts/test.sh does)")
    profile = scratch / f"chromium-profile-{page.stem}"
    net_log = scratch / f"net-log-{page.stem}.json"
    command = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        # Without these Chromium keeps calling out to the network, which is closed here.
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",  # the console's messages, one a line
        "--v=0",
        f"--log-net-log={net_log}",
        "--hide-scrollbars",
        f"--window-size=1280,{height}",
        "--dump-dom",
    ]
    if screenshot is not None:
        command.append(f"--screenshot={screenshot}")
    if settle_ms is not None:
        command.append(f"--virtual-time-budget={settle_ms}")
    if dark:
        command.append("--force-dark-mode")
    done = subprocess.run(
        [*command, page.as_uri()], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    console = [m["message"] for m in map(CONSOLE_LINE.search, done.stderr.splitlines()) if m]
    return Rendered(Page(done.stdout), console, page_requests(net_log))


def page_requests(net_log: Path) -> list[str]:
    """The URLs of the network requests a `file://` page made, from Chromium's net log.

    Chromium's own calls home (its clock, updates, accounts) are in the log too, but a page's
    requests are the only ones keyed to the page's site (their network isolation key names
    `file://`). A `file://` page's own load is no network request and is not in the log."""
    log = json.loads(net_log.read_text(encoding="utf-8"))
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [
        event["params"]["url"]
        for event in log["events"]
        if event["type"] == start
        and "file://" in event.get("params", {}).get("network_isolation_key", "")
    ]


def charts_drawn(rendered: Rendered) -> bool:
    """Whether the report's script ran to its end (it marks the body when it has)."""
    body = rendered.dom.find("body")
    return bool(body) and body[0].attrs.get("data-charts") == "drawn"


def png_facts(path: Path) -> tuple[int, int, int]:
    """(width, height, distinct byte values of its pixels) of a PNG file."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    chunks, offset = [], 8
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        if kind == b"IDAT":
            chunks.append(data[offset + 8 : offset + 8 + length])
        offset += 12 + length
    return width, height, len(set(zlib.decompress(b"".join(chunks))))
