"""Great Expectations' Data Docs that work offline: no CDN, every asset from the site's folder.

Great Expectations 1.x writes pages that load Bootstrap, jQuery, bootstrap-table, Font Awesome
and more from CDNs (and its logo from S3). On a machine without internet, as most bank
networks are, its index lists nothing (the table is filled by jQuery) and a validation page's
status column is blank (the icons are Font Awesome glyphs). This package gives the site those
assets itself:

- `static/vendor/`: the files the pages use, of exactly the versions Great Expectations'
  templates name, each package with its license (`static/vendor/README.md` says where each
  file comes from);
- `templates/`: Great Expectations' templates that name a CDN (`page.j2`, `index_page.j2`,
  `js_script_imports.j2`, `top_navbar.j2`), copied from Great Expectations 1.24.1 and changed
  only to name those files by relative URL (`offline_assets.j2`), plus a style that keeps the
  dark colour scheme from fetching the dark logo from S3 (`data_docs_offline_styles.css`), and
  `favicon.j2`, whose original names a validation page's favicon one folder short;
- `OfflineSiteBuilder`, the site's builder (`class_name`/`module_name` of the site in
  `great_expectations.yml`, which `ledger_engine.audit.expectations` keeps so): Great
  Expectations' `SiteBuilder`, whose pages are rendered by `OfflinePageView` and
  `OfflineIndexPageView` and which copies `static/vendor/` into the site's `static/vendor/`
  whenever it builds.

Why views, not a pass over the written pages: Great Expectations looks for templates in a
project's `plugins/custom_data_docs/views/` only after its own, so a template there can add a
page but never replace one of Great Expectations'; a view whose loader looks in `templates/`
first does replace them, so each page is right as Great Expectations writes it, whoever builds
it (a checkpoint's action, `build_data_docs`, a run's page alone), with no HTML rewritten by
pattern afterwards.

Left out, as no page of ours uses them: Vega, Vega-Lite and Vega-Embed (charts of profiling
and of expectations on column distributions; our suites have none), Font Awesome's regular and
brand faces and its TrueType files (every icon is of the solid face; Chromium and every current
browser read WOFF2).
"""

from __future__ import annotations

import mimetypes
from collections.abc import Iterator, Mapping
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Any

from great_expectations.render.renderer.site_builder import SiteBuilder
from great_expectations.render.view import DefaultJinjaIndexPageView, DefaultJinjaPageView
from jinja2 import ChoiceLoader, PackageLoader

MODULE = __name__  # the `module_name` of the site and its views in the project's config
SITE_BUILDER = "OfflineSiteBuilder"  # the site's `class_name`
# The site's sections (Great Expectations' `SiteBuilder` defaults), each rendered by our view.
SECTIONS = ("expectations", "validations", "profiling")
VENDOR = "vendor"  # the folder of the assets, under the package's and the site's `static/`


def _offline_first(view: DefaultJinjaPageView) -> None:
    """Make `view` look for a template in this package's `templates/` before anywhere else."""
    ours = PackageLoader(MODULE, "templates")
    view.env.loader = ChoiceLoader([ours, view.env.loader])


class OfflinePageView(DefaultJinjaPageView):
    """Great Expectations' page view (suites, validation results), rendering our templates
    where we have them: the pages name their assets by relative URL, never a CDN."""

    def __init__(self, custom_styles_directory: Any = None, custom_views_directory: Any = None):
        super().__init__(custom_styles_directory, custom_views_directory)
        _offline_first(self)


class OfflineIndexPageView(DefaultJinjaIndexPageView):
    """Great Expectations' index page view, rendering our templates where we have them."""

    def __init__(self, custom_styles_directory: Any = None, custom_views_directory: Any = None):
        super().__init__(custom_styles_directory, custom_views_directory)
        _offline_first(self)


PAGE_VIEW = {"module_name": MODULE, "class_name": OfflinePageView.__name__}
INDEX_VIEW = {"module_name": MODULE, "class_name": OfflineIndexPageView.__name__}


class OfflineSiteBuilder(SiteBuilder):
    """A Data Docs site that works offline: Great Expectations' `SiteBuilder` with every page
    rendered by our views (whatever view the site's config names) and this package's
    `static/vendor/` copied into the site whenever it builds. Configured as any site is."""

    # The parameters of `SiteBuilder.__init__`, named: Great Expectations hands a class those
    # of its runtime environment (`site_name`, `runtime_environment`) that its `__init__` names.
    def __init__(
        self,
        data_context: Any,
        store_backend: Any,
        site_name: str | None = None,
        site_index_builder: Mapping[str, Any] | None = None,
        show_how_to_buttons: bool = True,
        site_section_builders: Mapping[str, Any] | None = None,
        runtime_environment: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        sections = dict(site_section_builders or {})
        for name in SECTIONS:
            given = sections.get(name, {})
            if not isinstance(given, Mapping):  # turned off ("None", false, ...): stays off
                continue
            sections[name] = {**given, "view": PAGE_VIEW}
        index = {"class_name": "DefaultSiteIndexBuilder", **(site_index_builder or {})}
        index["view"] = INDEX_VIEW
        super().__init__(
            data_context,
            store_backend,
            site_name=site_name,
            site_index_builder=index,
            show_how_to_buttons=show_how_to_buttons,
            site_section_builders=sections,
            runtime_environment=runtime_environment,
            **kwargs,
        )

    def build(self, resource_identifiers: Any = None, build_index: bool = True) -> Any:
        """Great Expectations' build (the pages asked for, its static files, the index), then
        the vendored assets into the site's `static/vendor/`."""
        built = super().build(resource_identifiers=resource_identifiers, build_index=build_index)
        static = self.target_store.store_backends["static_assets"]
        for key, asset in vendored_assets():
            # Through the site's store, as Great Expectations copies its own static files: a
            # site in a bucket gets them too.
            static.set(key, asset.read_bytes(), content_type=content_type(key[-1]))
        return built


def content_type(name: str) -> str:
    """The media type of a vendored file, for a site in a bucket (a folder ignores it)."""
    if name.endswith(".woff2"):  # which Python's `mimetypes` may not know
        return "font/woff2"
    return mimetypes.guess_type(name)[0] or "text/plain; charset=utf-8"


def vendored_assets() -> Iterator[tuple[tuple[str, ...], Traversable]]:
    """Every vendored file with its key in the site, `("static", "vendor", <path>...)`."""

    def walk(folder: Traversable, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
        for entry in sorted(folder.iterdir(), key=lambda e: e.name):
            if entry.is_dir():
                yield from walk(entry, (*path, entry.name))
            else:
                yield (*path, entry.name), entry

    yield from walk(files(MODULE) / "static" / VENDOR, ("static", VENDOR))
