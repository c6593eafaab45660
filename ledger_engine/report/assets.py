"""The page's inline style and scripts, and the Content Security Policy that names them.

They are files of the package (`static/report.css`, `static/charts.js`, `static/theme.js`,
`static/airflow_links.js`) so
that they read as CSS and JavaScript; every page carries them inline, so that it works offline
as one file. The policy names each by the sha256 of its inline source (base64, as CSP wants
it): the browser runs that style and those scripts and nothing else.
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

_PACKAGE = "ledger_engine.report"  # the static files are its package data

# The text of a <style> or <script> element ends at the first `</style` or `</script`, and
# `<!--` inside a script changes how the browser looks for that end: a static file holding one
# would spill into the page (and no longer match its hash), so it is refused on reading.
_ENDS_RAW_TEXT = re.compile(r"</(style|script)|<!--", re.IGNORECASE)


@dataclass(frozen=True)
class InlineSource:
    """A static file's text, as inlined into a page."""

    name: str
    source: str

    @property
    def csp_hash(self) -> str:
        """The source's hash as a CSP source expression: 'sha256-<base64>'."""
        digest = hashlib.sha256(self.source.encode()).digest()
        return f"'sha256-{base64.b64encode(digest).decode()}'"


@dataclass(frozen=True)
class Assets:
    """The inline style and scripts of the report, and the policies that allow only them."""

    style: InlineSource
    script: InlineSource  # the charts
    theme: InlineSource  # the colour mode of Airflow's frame (every page, the workbench's too)
    airflow_links: InlineSource  # links to Airflow's pages, opened in its window (the workbench)

    @property
    def page_policy(self) -> str:
        """A run's page: only this style and these scripts may run; nothing is fetched, no
        other script executes."""
        return (
            f"default-src 'none'; style-src {self.style.csp_hash};"
            f" script-src {self.theme.csp_hash} {self.script.csp_hash}; base-uri 'none';"
            " form-action 'none'"
        )

    @property
    def index_policy(self) -> str:
        """The index: the style and the colour mode's script (it has no chart)."""
        return (
            f"default-src 'none'; style-src {self.style.csp_hash};"
            f" script-src {self.theme.csp_hash}; base-uri 'none'"
        )


@cache
def assets() -> Assets:
    """The report's style and scripts, read once from the package's `static/` files."""
    return Assets(
        style=_read("report.css"),
        script=_read("charts.js"),
        theme=_read("theme.js"),
        airflow_links=_read("airflow_links.js"),
    )


def _read(name: str) -> InlineSource:
    source = files(_PACKAGE).joinpath("static", name).read_text(encoding="utf-8")
    if _ENDS_RAW_TEXT.search(source):
        raise ValueError(f"static/{name} holds </style, </script or <!--: it cannot be inlined")
    return InlineSource(name, source)
