"""The report tasks' extra links (`web.links`): an "Audit report" or "Reconciliation" button
on a task in Airflow's UI opens the page inside Airflow's frame (the *Ledger* entry of the
navigation, `/plugin/ledger/...`), at an address relative to the site the user opened, never
at the host Airflow's configuration names (a user who came as `localhost` would land on a
second login there).
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from ledger_engine.web.links import report_url


@pytest.mark.parametrize(
    "base_url", ["", "http://127.0.0.1:8080", "http://127.0.0.1:8080/", "https://airflow.example"]
)
def test_a_report_link_is_a_path_into_the_ledger_view_of_airflows_ui(base_url: str) -> None:
    link = report_url("audit 2026-12-07.html", base_url)

    assert urlsplit(link)[:2] == ("", ""), "no scheme, no host: the site the user opened"
    assert link == "/plugin/ledger/ledger/reports/audit%202026-12-07.html"


def test_under_a_path_prefix_the_link_keeps_the_prefix() -> None:
    link = report_url("audit.html", "https://example.org/airflow/")

    assert link == "/airflow/plugin/ledger/ledger/reports/audit.html"
