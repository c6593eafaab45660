"""A report page as the plugin serves it (`web.app.served_page`): its `file:` links into a
ledger's Data Docs site become links to the plugin's Data Docs route; every other link stays
as written, and the Data Docs route serves a site's files and nothing else of the Great
Expectations project (`web.app.data_docs_file_of`).
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from ledger_engine.web.app import DATA_DOCS_SITE, data_docs_file_of, served_page

ROUTE = "http://airflow.example:8080/ledger/data-docs/"


def site_of(expectations: Path, ledger: str) -> Path:
    return expectations.joinpath(ledger, *DATA_DOCS_SITE)


def test_a_link_into_a_data_docs_site_goes_to_the_route(tmp_path: Path) -> None:
    expectations = tmp_path / "expectations"
    page_uri = (site_of(expectations, "bank") / "validations" / "v1" / "run.html").as_uri()
    html = f'<a href="{page_uri}">Data Docs</a> <a href="index.html#x">index</a>'

    served = served_page(html, expectations, ROUTE)

    assert served == (
        f'<a href="{ROUTE}bank/validations/v1/run.html">Data Docs</a>'
        ' <a href="index.html#x">index</a>'
    )


def test_links_outside_a_site_are_left_as_written(tmp_path: Path) -> None:
    expectations = tmp_path / "expectations"
    outside = [
        (expectations / "bank" / "gx" / "great_expectations.yml").as_uri(),
        (expectations / "bank" / "gx" / "uncommitted" / "config_variables.yml").as_uri(),
        (tmp_path / "elsewhere" / "gx" / "uncommitted" / "data_docs" / "local_site").as_uri(),
        "https://example.org/docs",
    ]
    html = "".join(f'<a href="{link}">x</a>' for link in outside)

    assert served_page(html, expectations, ROUTE) == html


@given(ledger=st.from_regex(r"[a-z][a-z0-9_]{0,20}", fullmatch=True), pages=st.integers(1, 4))
def test_every_link_into_any_ledgers_site_is_rewritten(ledger: str, pages: int) -> None:
    expectations = Path("/srv/ledger/expectations")
    links = [(site_of(expectations, ledger) / f"p{n}.html").as_uri() for n in range(pages)]
    html = " | ".join(f'<a href="{link}">{n}</a>' for n, link in enumerate(links))

    served = served_page(html, expectations, ROUTE)

    assert "file:" not in served
    assert served.count(f'href="{ROUTE}{ledger}/p') == pages


def test_the_route_serves_a_sites_files_and_nothing_else_of_the_project(tmp_path: Path) -> None:
    expectations = tmp_path / "expectations"
    site = site_of(expectations, "bank")
    (site / "static").mkdir(parents=True)
    (site / "index.html").write_text("site index")
    (site / "static" / "style.css").write_text("css")
    (expectations / "bank" / "gx" / "uncommitted" / "config_variables.yml").write_text("secret")
    (expectations / "bank" / "gx" / "great_expectations.yml").write_text("config")

    assert data_docs_file_of(expectations, "bank/index.html") == (site / "index.html").resolve()
    assert data_docs_file_of(expectations, "bank/static/style.css") is not None
    refused = [
        "bank/../bank/gx/great_expectations.yml",
        "bank/../../expectations/bank/gx/uncommitted/config_variables.yml",
        "bank",
        "other/index.html",
        "../bank/index.html",
        "/bank/index.html",
    ]
    assert {path: data_docs_file_of(expectations, path) for path in refused} == dict.fromkeys(
        refused
    )
