"""`ledger airflow`: one command runs Airflow on this machine with the project's DAGs and
settings, serves the UI on 127.0.0.1, runs DAGs (triggered through the REST API or from the
UI in a real browser), serves the ledger's pages behind Airflow's login (the plugin of
`ledger_engine.web`: a run's report opens from its task's link), and a Ctrl-C stops every
process it started.

The stack is started once for the module, as a person starts it (the `ledger` command in a
session of its own, a fresh ledger database, a few tens of events landed in its inbox), and
stopped by the last test with the SIGINT a terminal sends on Ctrl-C. The browser is Debian's
Chromium (/usr/bin/chromium) driven by Playwright; screenshots go to
`test-artifacts/airflow-ui/`.

The stack and what tells its processes apart are `tests/support/airflow_stack.py`'s.
"""

from __future__ import annotations

import json
import os
import re
import signal
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import ConsoleMessage, Page

from ledger_engine.pipeline.event_inbox import write_event_files
from tests.support.airflow_dags import PIPELINE_TASKS
from tests.support.airflow_stack import (
    REPO_ROOT,
    STOP_TIMEOUT,
    Stack,
    fetch,
    listening_addresses,
    run_badge,
    running_stack,
    stack_processes,
    stack_sessions,
    switched_on,
)
from tests.support.bank import deposit, transfer
from tests.support.html_page import Page as ParsedPage

DAG_ID = "ledger_pipeline"
TASKS = PIPELINE_TASKS
ARTIFACTS = REPO_ROOT / "test-artifacts" / "airflow-ui"
# Also matched by the browser (JavaScript's syntax: no named group).
REPORT_LINE = re.compile(r"audit report: (/\S+\.html)")

# The landed workload: ten accounts funded, then money moved between them. Every event applies.
ACCOUNTS = [f"acct-{n}" for n in range(10)]
EVENTS = [deposit(f"d-{a}", a, 1_000) for a in ACCOUNTS] + [
    transfer(f"t-{n}", ACCOUNTS[n % 10], ACCOUNTS[(n + 3) % 10], 10 + n) for n in range(20)
]


@pytest.fixture(scope="module")
def stack(ledger_database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """`ledger airflow` on a free port, started in a fresh data folder whose inbox holds
    `EVENTS`, on a fresh database, with `ledger_pipeline` run by hand only."""
    workdir = tmp_path_factory.mktemp("airflow_command")
    write_event_files(EVENTS, workdir / "ledger" / "inbox", events_per_file=len(EVENTS))
    # No run of its own when the DAG is switched on: the tests start each run.
    with running_stack(ledger_database_url, workdir, {"LEDGER_DAG_SCHEDULE": "none"}) as started:
        yield started


@pytest.fixture(scope="module")
def pipeline_on(stack: Stack) -> Stack:
    """The stack with `ledger_pipeline` switched on once Airflow has parsed it."""
    return switched_on(stack, DAG_ID)


# --- The stack serves -----------------------------------------------------------------------


def test_it_prints_the_url_and_a_login_that_works(stack: Stack) -> None:
    assert stack.url.startswith("http://127.0.0.1:")
    assert set(stack.logins) == {"admin", "viewer"}
    assert re.search(r"login: viewer / \S+ \(read only\)", stack.printed())
    token = stack._call("POST", "/auth/token", stack._login())
    assert token["access_token"]
    with pytest.raises(urllib.error.HTTPError) as refused:
        stack._call("POST", "/auth/token", {"username": "admin", "password": "not-it"})
    assert refused.value.code == 401


def test_the_ui_is_served_on_this_machine_only(stack: Stack) -> None:
    with urllib.request.urlopen(stack.url + "/", timeout=30) as response:
        assert response.status == 200
        assert "<html" in response.read().decode().lower()
    port = int(stack.url.rsplit(":", 1)[1])
    assert listening_addresses(port) == {"0100007F"}, "127.0.0.1 only"


def test_it_runs_the_projects_dags_and_none_of_airflows_examples(stack: Stack) -> None:
    dags = {d["dag_id"] for d in stack.api("GET", "/api/v2/dags?limit=100")["dags"]}
    assert dags == {DAG_ID, "ledger_replay", "ledger_reconcile"}


@pytest.fixture(scope="module")
def api_run(pipeline_on: Stack) -> tuple[dict[str, Any], str, dict[str, str]]:
    """A run of the pipeline triggered through the REST API, ended: the run as the API
    answered the trigger, its state and its tasks' states."""
    run = pipeline_on.api("POST", f"/api/v2/dags/{DAG_ID}/dagRuns", {"logical_date": None})
    return run, *pipeline_on.wait_for_run(run["dag_run_id"])


def test_a_run_triggered_through_the_rest_api_commits_the_landed_events(
    pipeline_on: Stack, api_run: tuple[dict[str, Any], str, dict[str, str]]
) -> None:
    stack = pipeline_on
    run, state, tasks = api_run
    assert run["run_type"] == "manual"

    assert tasks == dict.fromkeys(TASKS, "success"), stack.task_log(
        run["dag_run_id"], next(t for t, s in tasks.items() if s != "success")
    )
    assert state == "success"
    # The tasks reached the ledger the command was started for.
    assert stack.scalar("SELECT count(*) FROM ledger_events") == len(EVENTS)
    assert stack.scalar("SELECT sum(applied) FROM ledger_batches") == len(EVENTS)
    assert stack.scalar("SELECT count(*) FROM accounts") == len(ACCOUNTS)


# --- The ledger's pages, behind Airflow's login ----------------------------------------------

PAGES = ("/ledger/", "/ledger/reports/index.html", "/ledger/data-docs/bank/index.html")


def test_without_a_login_every_ledger_page_is_refused(stack: Stack) -> None:
    for path in PAGES:
        code, _, body = fetch(stack.url + path)
        assert (code, json.loads(body)) == (401, {"detail": "Not authenticated"}), path
        code, _, _ = fetch(stack.url + path, {"Authorization": "Bearer forged.token.value"})
        assert code in (401, 403), path
        # A browser asking for the page is sent to Airflow's login, and back after it.
        code, headers, _ = fetch(stack.url + path, {"Accept": "text/html"})
        assert code == 303, path
        assert "/auth/login" in headers["location"] and "next=" in headers["location"], path


def test_a_reader_gets_the_pages_and_nothing_outside_their_folders(
    stack: Stack, api_run: tuple[dict[str, Any], str, dict[str, str]]
) -> None:
    reports = stack.data_dir / "reports"
    secret = stack.data_dir / "airflow" / "airflow.cfg"
    assert "[core]" in secret.read_text(), "the file a traversal would reach"
    (reports / "out.html").symlink_to(secret)
    viewer = {"Authorization": f"Bearer {stack.token('viewer')}"}

    index = fetch(stack.url + "/ledger/reports/index.html", viewer)
    assert index[0] == 200 and b"Ledger audits" in index[2]
    assert fetch(stack.url + "/ledger/", viewer)[:2][0] == 303

    for path in (
        "/ledger/reports/out.html",
        "/ledger/reports/%2e%2e/airflow/airflow.cfg",
        "/ledger/reports/..%2fairflow%2fairflow.cfg",
        "/ledger/reports/%2fetc%2fpasswd",
        "/ledger/data-docs/bank/..%2f..%2fgreat_expectations.yml",
        "/ledger/data-docs/bank%2fgx%2fgreat_expectations.yml",
    ):
        code, _, body = fetch(stack.url + path, viewer)
        assert code == 404 and b"[core]" not in body and b"config_version" not in body, path

    # A name a page shows is escaped: the refusal a browser gets names it as text.
    hostile = "/ledger/reports/%3Cscript%3Ealert(1)%3C%2Fscript%3E.html"
    code, _, body = fetch(stack.url + hostile, viewer | {"Accept": "text/html"})
    assert code == 404 and b"<script>alert" not in body
    assert b"&lt;script&gt;alert(1)&lt;/script&gt;.html" in body


def runs_of(stack: Stack, dag_id: str) -> int:
    """How many runs of `dag_id` Airflow has, as its REST API counts them."""
    return stack.api("GET", f"/api/v2/dags/{dag_id}/dagRuns?limit=1")["total_entries"]


def test_a_read_only_user_may_read_but_not_trigger(
    stack: Stack, api_run: tuple[dict[str, Any], str, dict[str, str]]
) -> None:
    """The viewer reads the index of the pages (the run's audit wrote it), which links to
    every audit page written; a trigger of theirs is refused, and makes no run."""
    viewer = stack.token("viewer")
    code, headers, body = fetch(
        stack.url + "/ledger/reports/index.html", {"Authorization": f"Bearer {viewer}"}
    )
    assert code == 200
    shown = ParsedPage(body.decode())
    assert headers["content-type"].startswith("text/html"), headers
    assert shown.find("h1") and "Ledger audits" in shown.text, shown.text[:300]
    written = {page.name for page in (stack.data_dir / "reports").glob("audit-*.html")}
    linked = {Path(a.attrs["href"]).name for a in shown.find("a") if "href" in a.attrs}
    assert written and written <= linked, (written, linked)

    runs = runs_of(stack, DAG_ID)
    with pytest.raises(urllib.error.HTTPError) as refused:
        stack._call("POST", f"/api/v2/dags/{DAG_ID}/dagRuns", {"logical_date": None}, viewer)
    assert refused.value.code == 403
    assert runs_of(stack, DAG_ID) == runs, "the refused trigger made a run"


# --- The UI path, in a browser -------------------------------------------------------------


def test_in_the_ui_a_person_logs_in_triggers_the_pipeline_and_opens_its_pages(
    pipeline_on: Stack, page: Page
) -> None:
    stack = pipeline_on
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto(f"{stack.url}/dags/{DAG_ID}")
    page.get_by_label("Username").fill(stack.user)
    page.get_by_label("Password").fill(stack.password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"**/dags/{DAG_ID}")
    console: list[ConsoleMessage] = []  # from here on, logged in
    page.on("console", lambda message: console.append(message))

    page.get_by_role("button", name="Trigger Dag").click()
    page.get_by_role("dialog").get_by_role("button", name="Trigger", exact=True).click()
    page.wait_for_url(re.compile(rf"/dags/{DAG_ID}/runs/[^/]+$"))
    run_id = page.get_by_role("heading", name=re.compile(r"^manual__")).inner_text()

    shown = run_badge(page)
    page.screenshot(path=ARTIFACTS / "run.png", full_page=True)
    assert shown == "Success", stack.run_states(run_id)
    assert stack.run_states(run_id) == ("success", dict.fromkeys(TASKS, "success"))

    # The report task's log, in the UI, says where the report is.
    page.get_by_role("table").get_by_role("link", name="write_audit_report").click()
    logged = page.get_by_text(REPORT_LINE).first
    logged.wait_for()
    page.screenshot(path=ARTIFACTS / "report-task-log.png", full_page=True)
    report = Path(REPORT_LINE.search(logged.inner_text())[1])
    assert report.parent == stack.data_dir / "reports", "the ledger's settings reached the task"

    # The task's link opens that page inside Airflow's frame (the Ledger view), at a path of
    # the site the user is on, served by Airflow under its own address.
    page.get_by_text("Details", exact=True).click()
    page.get_by_role("link", name="Audit report").click()
    page.wait_for_url(f"{stack.url}/plugin/ledger/ledger/reports/{report.name}")
    shown = page.frame_locator("iframe").first
    shown.get_by_role("heading", level=1, name="Ledger audit").wait_for()
    page.screenshot(path=ARTIFACTS / "audit-report.png", full_page=True)
    (framed,) = [f for f in page.main_frame.child_frames if f.url.endswith(report.name)]
    assert framed.title().startswith("Ledger audit")
    assert shown.locator("#verdict").inner_text().startswith("All audits passed.")
    assert shown.locator("body").get_attribute("data-charts") == "drawn", "its script ran"

    # Its checks link to their Data Docs page, served alike, in the same frame.
    shown.get_by_role("link", name="Data Docs").first.click()
    page.wait_for_url(f"{stack.url}/plugin/ledger/ledger/data-docs/bank/validations/**")
    page.wait_for_load_state("networkidle")
    page.screenshot(path=ARTIFACTS / "data-docs.png", full_page=True)
    (docs,) = [f for f in page.main_frame.child_frames if "/data-docs/bank/validations/" in f.url]
    assert "Great Expectations" in docs.title()

    # The navigation's Ledger entry shows the index inside Airflow's UI.
    page.goto(f"{stack.url}/dags/{DAG_ID}")
    page.get_by_role("link", name="Ledger", exact=True).click()  # not the tag "ledger"
    index = page.frame_locator("iframe").first
    index.get_by_role("heading", name="Ledger audits").wait_for()
    page.screenshot(path=ARTIFACTS / "ledger-nav.png", full_page=True)
    assert index.get_by_role("link", name=re.compile(r"UTC$")).count() >= 1

    # The DAG list shows the reconciliation's daily clock beside its asset (a tag).
    page.goto(f"{stack.url}/dags")
    page.get_by_text("clock: @daily (UTC)").wait_for()
    page.screenshot(path=ARTIFACTS / "dag-list.png", full_page=True)

    assert [m for m in console if m.type == "error"] == []
    assert [u for u in requested if not u.startswith((stack.url, "blob:", "data:"))] == []


# --- Ctrl-C ---------------------------------------------------------------------------------


def test_ctrl_c_stops_airflow_and_every_process_it_started(stack: Stack) -> None:
    owner = stack.process.pid
    sessions = stack_sessions(owner)
    assert sessions == stack.sessions, "the components ran from start to now"
    assert os.getsid(owner) not in sessions, "the components are out of the terminal's session"
    before = stack_processes(owner, sessions)
    commands = " | ".join(p.command for p in before)
    for component in ("scheduler", "dag-processor", "triggerer", "api_server", "serve-logs"):
        assert component in commands, f"no {component} among the stack's processes"
    assert any(p.marked for p in before), "the marker reaches the processes"

    os.killpg(owner, signal.SIGINT)  # what a terminal sends its foreground job on Ctrl-C

    assert stack.process.wait(timeout=STOP_TIMEOUT) == 0, stack.printed()[-3000:]
    assert stack_processes(owner, sessions) == []
    assert "no process left" in stack.printed()
