"""Great Expectations' Data Docs on a machine without internet (most bank networks): the site
an audit builds works from its own folder (`ledger_engine.audit.expectations.data_docs`).

The batch audit's Great Expectations part passes on the bank workload; then a balance is
changed behind the engine's back and the full audit's fails. Headless Chromium (Debian's
`chromium`) opens the site's index, both validation pages and the suite's page: none fetches
anything from anywhere (in the light or the dark colour scheme), none says anything on the
console, the index's table (filled by jQuery and bootstrap-table) lists both runs, and the
status icons are drawn in Font Awesome's solid webfont, which the page loaded. Screenshots are
kept in `test-artifacts/data-docs/` for a person to look at.

The vendored files are checked against their manifest, and the templates they replace against
the Great Expectations release they were copied from.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import great_expectations
import pytest
from sqlalchemy import text

from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.audit.expectations.data_docs import (
    OfflineIndexPageView,
    OfflinePageView,
    OfflineSiteBuilder,
)
from ledger_engine.audit.expectations.run import run_batch_expectations, run_expectations
from ledger_engine.audit.findings import CheckResult
from ledger_engine.config import PROJECT_ROOT
from ledger_engine.store.database import connect
from tests.support.browser import Rendered, render
from tests.support.html_page import read_page

LEDGER = build_ledger()
ARTIFACTS = PROJECT_ROOT / "test-artifacts" / "data-docs"
FOLD_ACCOUNTS = "accounts equals the fold of its change log"
FONT_AWESOME = "Font Awesome 6 Free"
PASSED, FAILED = "fa-check-circle", "fa-times"  # Great Expectations' status icons
VENDOR = files("ledger_engine.audit.expectations.data_docs") / "static" / "vendor"
OUR_TEMPLATES = files("ledger_engine.audit.expectations.data_docs") / "templates"
GX_TEMPLATES = Path(great_expectations.__file__).parent / "render" / "view" / "templates"
# Great Expectations 1.24.1's templates that `OUR_TEMPLATES` replace, with copies changed only
# where they name an asset: their SHA-256 when they were copied. Another release's templates
# may differ in more than their assets: copy them again, then update this. All but the last
# name a CDN; the last names the favicon of a validation page one folder short.
REPLACED = {
    "page.j2": "e5069d47a8737ca6d6ec86c1a7842aa00f42f472a7523321e9cc0aec413ec3e1",
    "index_page.j2": "66a2fde8f842076ca82c0c01dfc3911bf0f6ee464fcbcb9dbeeb02d6420620e1",
    "js_script_imports.j2": "0966a7f75b3666c4e23bfd107e412a0c8b1286eaa66a06dc0f6aafd4df91b1fb",
    "top_navbar.j2": "9a0ddc8b6057090e45bf6de8d3cad2dbaa4c09e22d8f1e0acac1e481b7729e89",
    "favicon.j2": "47d28de9263c108c4f97d9af60a08567d0ed30215b59951c35e2bd3c6923c127",
}


# --- The site: two audits' Data Docs -------------------------------------------------------


@dataclass(frozen=True)
class Site:
    """The Data Docs site after both audits, and its pages."""

    index: Path
    batch_page: Path  # the batch audit's validation page (what its checks link to)
    full_page: Path  # the full audit's validation page
    suite_page: Path  # the page of the suite `ledger_integrity`

    @property
    def root(self) -> Path:
        return self.index.parent


def page_of(checks: list[CheckResult]) -> Path:
    """The page the checks link to (all to the same)."""
    (link,) = {c.link for c in checks}
    assert link is not None and link.startswith("file://")
    return Path(unquote(urlparse(link).path))


@pytest.fixture(scope="module")
def site(committed_ledger_url: str, tmp_path_factory: pytest.TempPathFactory) -> Site:
    """The Great Expectations parts of two audits, in one new project: the batch audit's,
    passing on the bank workload (it renders its run's page), then the full audit's, failing
    after alice's balance was changed behind the engine's back (it renders its run's page, the
    suites' pages and the index)."""
    root = tmp_path_factory.mktemp("data-docs") / "expectations"
    batch = run_batch_expectations(committed_ledger_url, LEDGER, root)
    assert all(c.passed for c in batch)
    engine = connect(committed_ledger_url)
    try:
        with engine.begin() as conn:
            conn.execute(text("UPDATE accounts SET value = value + 1 WHERE key = 'alice'"))
    finally:
        engine.dispose()
    full = run_expectations(committed_ledger_url, LEDGER, root)
    assert FOLD_ACCOUNTS in {c.name for c in full if not c.passed}

    index = page_of(full)
    (full_page,) = (index.parent / "validations" / "ledger_integrity").rglob("*.html")
    suite_page = index.parent / "expectations" / "ledger_integrity.html"
    return Site(index, page_of(batch), full_page, suite_page)


def test_a_new_sites_first_batch_audit_builds_its_start_page_and_suite_pages(
    committed_ledger_url: str, tmp_path: Path
) -> None:
    root = tmp_path / "expectations"

    run_page = page_of(run_batch_expectations(committed_ledger_url, LEDGER, root))

    site = run_page.parents[4]
    assert run_page.is_relative_to(site / "validations")
    assert (site / "index.html").is_file(), "the site's start page"
    # Every page of the site a page links to (Home, its suite, ...) is there.
    targets = {
        (run_page.parent / unquote(href)).resolve()
        for href in re.findall(r'href="([^"#:]+\.html)', run_page.read_text(encoding="utf-8"))
    }
    assert site.resolve() / "index.html" in targets
    assert site.resolve() / "expectations" / "ledger_batch_integrity.html" in targets
    assert [t for t in targets if not t.is_file()] == []


# --- Looking at a page ---------------------------------------------------------------------

# Appended to a copy of a page (beside it, so that its relative URLs hold): once the page's
# fonts are settled, it writes onto <body> what each status icon looks like (the font family
# of its glyph, its width, the text of its table row) and the state of every Font Awesome font
# face the page declares.
ICON_PROBE = """
<script>
document.fonts.ready.then(() => {
  const icons = [...document.querySelectorAll("i.fas")].map((icon) => ({
    classes: icon.className,
    family: getComputedStyle(icon, "::before").fontFamily,
    width: icon.getBoundingClientRect().width,
    row: icon.closest("tr")?.innerText ?? "",
  }));
  const faces = [...document.fonts]
    .filter((face) => face.family.replaceAll('"', "") === "FAMILY")
    .map((face) => ({ weight: face.weight, status: face.status }));
  document.body.dataset.iconProbe = JSON.stringify({ icons, faces });
});
</script>
""".replace("FAMILY", FONT_AWESOME)


@dataclass(frozen=True)
class Icons:
    icons: list[dict]  # each status icon: classes, family, width, row
    faces: list[dict]  # each Font Awesome face the page declares: weight, status


# Appended alike: once the page has loaded, it writes onto <body> whether the dark colour
# scheme is in force and how the navigation bar's logo is shown (its image, whether it loaded
# and is visible, its filter) over what background; `null`s where the page has no logo.
LOGO_PROBE = """
<script>
window.addEventListener("load", () => {
  const logo = document.querySelector(".navbar-brand a img");
  const style = logo && getComputedStyle(logo);
  document.body.dataset.logoProbe = JSON.stringify({
    dark: matchMedia("(prefers-color-scheme: dark)").matches,
    image: logo?.currentSrc ?? null,
    loaded: Boolean(logo?.complete && logo.naturalWidth > 0),
    visibility: style?.visibility ?? null,
    filter: style?.filter ?? null,
    background: logo ? getComputedStyle(logo.parentElement).backgroundImage : null,
  });
});
</script>
"""


def probed(page: Path, scratch: Path, probe: str, **shown: Any) -> tuple[Rendered, Any]:
    """`page` rendered (`render`'s keywords in `shown`) with the script `probe` appended to a
    copy of it (beside it, so that its relative URLs hold), and what the probe wrote onto
    <body> (as `data-<name>`, JSON), read back."""
    copy = page.with_name(f"{page.stem}-probed.html")
    markup = page.read_text(encoding="utf-8")
    copy.write_text(markup.replace("</body>", probe + "</body>"), encoding="utf-8")
    try:
        rendered = render(copy, scratch, **shown)
    finally:
        copy.unlink()
    body = rendered.dom.find("body")[0]
    found = [value for name, value in body.attrs.items() if name.endswith("-probe")]
    assert len(found) == 1, "the probe did not run"
    return rendered, json.loads(found[0])


def icons_of(page: Path, scratch: Path) -> Icons:
    """How the status icons of `page` are drawn, read by `ICON_PROBE` in a copy of it."""
    _, found = probed(page, scratch, ICON_PROBE, settle_ms=5000)
    return Icons(found["icons"], found["faces"])


def shown(page: Path, scratch: Path, name: str) -> Rendered:
    """`page` in Chromium, its screenshot kept in `ARTIFACTS`."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    screenshot = ARTIFACTS / f"{name}.png"
    screenshot.unlink(missing_ok=True)
    rendered = render(page, scratch, screenshot)
    assert screenshot.is_file()
    return rendered


def assert_offline(rendered: Rendered) -> None:
    assert rendered.requests == []  # nothing fetched from anywhere: only the site's files
    assert rendered.console == []  # no script failed (`$ is not defined` when jQuery is missing)


def assert_icons_drawn(icons: Icons, kinds: set[str]) -> None:
    """The page has status icons of `kinds`, each drawn (a glyph of some width) in Font
    Awesome's solid face, which the page loaded."""
    shown = {c for icon in icons.icons for c in icon["classes"].split() if c in (PASSED, FAILED)}
    assert shown == kinds
    for icon in icons.icons:
        assert FONT_AWESOME in icon["family"], icon
        assert icon["width"] > 0, icon
    assert {"weight": "900", "status": "loaded"} in icons.faces


def assert_icon(icons: Icons, row_text: str, kind: str) -> None:
    """The icon in the one table row that reads `row_text` is `kind`."""
    (icon,) = [i for i in icons.icons if row_text in i["row"]]
    assert kind in icon["classes"].split()


# --- The site, offline ---------------------------------------------------------------------


def listed_runs(rendered: Rendered) -> list[str]:
    """The suites of the runs the index's table of validation results lists (the page's script
    fills it, with jQuery)."""
    (runs,) = [t for t in rendered.dom.tables.values() if t and "Run Time" in t[0]]
    return sorted(row[-1] for row in runs[1:])


def test_the_index_lists_both_runs_with_their_status(site: Site, tmp_path: Path) -> None:
    rendered = shown(site.index, tmp_path, "index")

    assert_offline(rendered)
    assert listed_runs(rendered) == ["ledger_batch_integrity", "ledger_integrity"]
    icons = icons_of(site.index, tmp_path)
    assert_icons_drawn(icons, {PASSED, FAILED})
    assert_icon(icons, "ledger_batch_integrity", PASSED)
    assert_icon(icons, "state_rows", FAILED)  # the full audit's run (its asset: state_rows)


def test_the_index_fetches_nothing_in_the_dark_colour_scheme(site: Site, tmp_path: Path) -> None:
    """Great Expectations' style draws a dark logo from S3 there; the site shows its own,
    inverted to read on the dark bar, above the same table of runs."""
    rendered, logo = probed(site.index, tmp_path, LOGO_PROBE, dark=True, settle_ms=5000)

    assert_offline(rendered)
    assert logo["dark"], "the page was not shown in the dark colour scheme"
    assert logo["image"] == (site.root / "static" / "images" / "logo-long.png").as_uri()
    assert logo["loaded"] and logo["visibility"] == "visible", logo
    assert (logo["filter"], logo["background"]) == ("invert(1) hue-rotate(180deg)", "none")
    assert listed_runs(rendered) == ["ledger_batch_integrity", "ledger_integrity"]


def test_a_failed_validation_page_draws_its_status_icons(site: Site, tmp_path: Path) -> None:
    assert_offline(shown(site.full_page, tmp_path, "validation"))

    icons = icons_of(site.full_page, tmp_path)
    assert_icons_drawn(icons, {PASSED, FAILED})
    assert_icon(icons, "`accounts` equals the fold of its change log", FAILED)
    assert_icon(icons, "`asset_ledger` equals the fold of its change log", PASSED)


def test_the_batch_audits_page_works_offline(site: Site, tmp_path: Path) -> None:
    assert_offline(render(site.batch_page, tmp_path))

    assert_icons_drawn(icons_of(site.batch_page, tmp_path), {PASSED})


def test_the_suites_page_works_offline(site: Site, tmp_path: Path) -> None:
    rendered = render(site.suite_page, tmp_path)

    assert_offline(rendered)
    assert "`accounts` equals the fold of its change log" in rendered.dom.text


ASSET_ATTRIBUTE = {"link": "href", "script": "src", "img": "src"}


def test_every_asset_a_page_names_is_a_file_of_the_site(site: Site) -> None:
    pages = sorted(site.root.rglob("*.html"))
    assert {site.index, site.batch_page, site.full_page, site.suite_page} <= set(pages)
    named = 0
    for page in pages:
        for element in read_page(page).elements:
            url = element.attrs.get(ASSET_ATTRIBUTE.get(element.tag, ""), "")
            if not url:
                continue
            assert not urlparse(url).scheme and not url.startswith("//"), (page, url)
            assert (page.parent / unquote(url)).resolve().is_file(), (page, url)
            named += 1
    assert named >= 10 * len(pages)  # the style sheets, scripts and logo of every page


# --- What the site is made of --------------------------------------------------------------


def test_every_page_of_the_site_is_rendered_by_an_offline_view(tmp_path: Path) -> None:
    context = great_expectations.get_context(mode="file", project_root_dir=tmp_path)

    builder = OfflineSiteBuilder(
        context,
        {"class_name": "TupleFilesystemStoreBackend", "base_directory": "data_docs/"},
        site_name="local_site",
        site_section_builders={"profiling": "None"},  # a section turned off stays off
        runtime_environment={"root_directory": tmp_path},
    )

    sections = builder.site_section_builders
    assert set(sections) == {"expectations", "validations"}
    assert all(isinstance(s.view_class, OfflinePageView) for s in sections.values())
    assert isinstance(builder.site_index_builder.view_class, OfflineIndexPageView)


MANIFEST_ROW = re.compile(r"^\| `(?P<path>[^`]+)` \| .* \| (?P<sha256>[0-9a-f]{64}) \|$")


def vendored_files() -> dict[str, bytes]:
    root = Path(str(VENDOR))
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and p.name != "README.md"
    }


def test_the_vendored_files_are_those_of_their_manifest_and_no_others() -> None:
    manifest = {
        m["path"]: m["sha256"]
        for line in (VENDOR / "README.md").read_text(encoding="utf-8").splitlines()
        if (m := MANIFEST_ROW.match(line))
    }

    found = {path: hashlib.sha256(data).hexdigest() for path, data in vendored_files().items()}
    assert found == manifest
    licenses = {path.split("/")[0] for path in found if path.split("/")[-1].startswith("LICENSE")}
    assert licenses == {path.split("/")[0] for path in found}  # each package with its license


def test_the_vendored_scripts_are_the_ones_great_expectations_pins_by_hash() -> None:
    # Its template gives the CDN's files of popper.js and Bootstrap with an SRI hash.
    original = (GX_TEMPLATES / "js_script_imports.j2").read_text(encoding="utf-8")
    pin = re.compile(r'src="https://[^"]*/([^/"]+\.min\.js)" integrity="([^"]+)"')
    pinned = dict(pin.findall(original))
    assert set(pinned) == {"popper.min.js", "bootstrap.min.js"}
    for path, data in vendored_files().items():
        name = path.split("/")[-1]
        if name in pinned:
            digest = base64.b64encode(hashlib.sha384(data).digest()).decode()
            assert pinned.pop(name) == f"sha384-{digest}"
    assert pinned == {}


def test_the_replaced_templates_are_those_of_the_release_they_were_copied_from() -> None:
    installed = {
        name: hashlib.sha256((GX_TEMPLATES / name).read_bytes()).hexdigest() for name in REPLACED
    }

    assert installed == REPLACED
    assert all((OUR_TEMPLATES / name).is_file() for name in REPLACED)
    # Which are all the templates that load something from elsewhere, but `page_minimal.j2`,
    # which nothing renders.
    loading = re.compile(r'<(link|script)[^>]*(src|href)="https?://|static_images_dir = "https?://')
    naming_a_cdn = {p.name for p in GX_TEMPLATES.glob("*.j2") if loading.search(p.read_text())}
    assert naming_a_cdn == {*REPLACED, "page_minimal.j2"} - {"favicon.j2"}
