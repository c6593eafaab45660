"""The report tasks' extra links: an "Audit report" or "Reconciliation" button on the task
in Airflow's UI that opens the page that task of that DAG run wrote, served by the plugin.

A report task publishes its page's file name under `PAGE_KEY` as soon as the page is written
(before it fails for an unclean audit, so a failed run links to its findings too). When the
task ends, Airflow's task runner asks each of the operator's links for its URL and keeps it
with the task instance; the UI shows it from there. No page written, no link.

A link is a path, never a whole URL: the runner does not know the address the user opened the
UI at (`127.0.0.1` or `localhost`, whose sessions differ), and a path leads to the page on the
site the user is on. The path is the page inside the *Ledger* entry of Airflow's navigation
(`/plugin/<REPORTS_VIEW>/...`, whose frame the UI loads with the rest of the path), so the
page opens within Airflow's frame, not instead of Airflow.

Imported by the DAG files at parse time: it imports only Airflow's SDK. It also names what
else the DAGs and the plugin must agree on: the param by which the workbench narrows a run of
`ledger_reconcile` to one source.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlsplit

from airflow.sdk import BaseOperatorLink
from airflow.sdk.configuration import conf

PAGE_KEY = "report_page"  # the XCom under which a report task publishes its page's name
MOUNT = "/ledger"  # where the plugin mounts its pages in Airflow's address space
REPORTS_VIEW = "ledger"  # the route of the plugin's *Ledger* view in Airflow's UI (`/plugin/...`)
RECONCILE_SOURCE_PARAM = "source"  # `ledger_reconcile`'s param: the one source a run reconciles


def report_url(page_name: str, base_url: str) -> str:
    """The path of the report page `page_name` shown in the *Ledger* view of the Airflow UI at
    `base_url` (its configured `[api] base_url`, of which only the path counts: empty, or
    where a proxy serves Airflow under a prefix)."""
    prefix = urlsplit(base_url).path.rstrip("/")
    return f"{prefix}/plugin/{REPORTS_VIEW}{MOUNT}/reports/{quote(page_name)}"


class _PublishedPage(BaseOperatorLink):
    """A link to the page the task published under `PAGE_KEY`, if it published one."""

    name = "Report"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        # In the task runner, `ti_key` is the running task instance itself.
        page = ti_key.xcom_pull(task_ids=ti_key.task_id, key=PAGE_KEY)
        if not page:
            return ""
        return report_url(str(page), conf.get("api", "base_url", fallback=""))


class AuditReportLink(_PublishedPage):
    """The audit page an audit's report task wrote."""

    name = "Audit report"


class ReconciliationLink(_PublishedPage):
    """The reconciliation page a reconciliation's report task wrote."""

    name = "Reconciliation"
