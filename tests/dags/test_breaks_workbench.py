"""The breaks workbench inside Airflow, on the stack `ledger airflow` starts: a statement lands,
`ledger_reconcile` runs on it by itself, and a person works the breaks it opened in the
browser (the *Breaks* entry of Airflow's navigation): matches two by hand, writes one off,
then the pipeline commits the adjusting event and a reconciliation started from the
workbench settles it. Every page and action is behind Airflow's login; a read-only user reads
and may do nothing; forms from another site, unknown and resolved breaks are refused, and a
refusal changes nothing.

Screenshots go to `test-artifacts/airflow-ui/workbench-*.png` (the README shows them).
"""

from __future__ import annotations

import http.server
import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
from playwright.sync_api import ConsoleMessage, FrameLocator, Page, expect

from ledger_engine.pipeline.event_inbox import write_event_files
from ledger_engine.reconcile.sources import load_sources
from ledger_engine.reconcile.statement_inbox import land_statement
from tests.support.airflow_stack import (
    REPO_ROOT,
    RUN_TIMEOUT,
    Stack,
    fetch,
    running_stack,
    switched_on,
)
from tests.support.bank import deposit
from tests.support.statements import Entry, Statement, camt053_document

PIPELINE, RECONCILE = "ledger_pipeline", "ledger_reconcile"
SOURCE = "Main bank"
DECLARATION = REPO_ROOT / "expectations" / "bank" / "reconciliation.toml"
ARTIFACTS = REPO_ROOT / "test-artifacts" / "airflow-ui"
HOSTILE = "<img src=x onerror=alert(1)>"  # an account name, kept as text wherever it shows

MOVEMENTS = [
    deposit("d1", "alice", 10_000, reference="R1", value_date="2026-11-02"),
    deposit("d2", "alice", 5_000, reference="R2", value_date="2026-11-03"),
    deposit("d3", "alice", 700, reference="R3", value_date="2026-11-03"),
    deposit("d4", "bob", 3_000, reference="R4", value_date="2026-11-03"),
    deposit("d5", HOSTILE, 100, reference="R5", value_date="2026-11-03"),
]
# What the bank says: R1 as booked; R2 for 55.00, not 50.00; an R9 of alice's and an R8 of
# bob's and an R7 of the third account's the ledger never saw; nothing of R3, R4 and R5.
STATEMENT = camt053_document(
    [
        Statement(
            "alice",
            iban=False,
            entries=[
                Entry(10_000, booking_date=date(2026, 11, 2), reference="R1"),
                Entry(5_500, booking_date=date(2026, 11, 3), reference="R2"),
                Entry(1_200, booking_date=date(2026, 11, 4), reference="R9"),
            ],
        ),
        Statement(
            "bob",
            iban=False,
            entries=[Entry(2_000, booking_date=date(2026, 11, 4), reference="R8")],
        ),
        Statement(
            HOSTILE,
            iban=False,
            entries=[Entry(300, booking_date=date(2026, 11, 4), reference="R7")],
        ),
    ]
)
# The breaks it opens: (reason, account, the statement's reference or the ledger's request).
OPENED = {
    ("amount_mismatch", "alice", "R2"),
    ("missing_in_ledger", "alice", "R9"),
    ("missing_in_ledger", "bob", "R8"),
    ("missing_in_statement", "alice", "d3"),
    ("missing_in_statement", "bob", "d4"),
    ("missing_in_ledger", HOSTILE, "R7"),
    ("missing_in_statement", HOSTILE, "d5"),
}


@pytest.fixture(scope="module")
def stack(ledger_database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """`ledger airflow` with `MOVEMENTS` in its inbox; the pipeline and the reconciliation
    run by hand and when a statement lands (every 2 s looked for), on no clock."""
    workdir = tmp_path_factory.mktemp("workbench")
    write_event_files(MOVEMENTS, workdir / "ledger" / "inbox", events_per_file=len(MOVEMENTS))
    settings = {
        "LEDGER_DAG_SCHEDULE": "none",
        "LEDGER_RECONCILE_SCHEDULE": "none",
        "LEDGER_STATEMENT_POLL_SECONDS": "2",
    }
    with running_stack(ledger_database_url, workdir, settings) as started:
        yield started


@pytest.fixture(scope="module")
def reconciled(stack: Stack) -> dict[str, Any]:
    """The movements committed by a run of the pipeline, then `STATEMENT` landed with the
    reconciliation switched on: the run the statement started, once ended."""
    run = switched_on(stack, PIPELINE).api(
        "POST", f"/api/v2/dags/{PIPELINE}/dagRuns", {"logical_date": None}
    )
    assert stack.wait_for_run(run["dag_run_id"])[0] == "success"
    switched_on(stack, RECONCILE)
    source = load_sources(DECLARATION).sources[SOURCE]
    land_statement(stack.data_dir / "statements", source, "2026-11-04.xml", STATEMENT)
    deadline = time.monotonic() + RUN_TIMEOUT
    while not (runs := stack.api("GET", f"/api/v2/dags/{RECONCILE}/dagRuns")["dag_runs"]):
        assert time.monotonic() < deadline, "no reconciliation started on the statement"
        time.sleep(2)
    (started,) = runs
    stack.wait_for_run(started["dag_run_id"], RECONCILE)
    return stack.api("GET", f"/api/v2/dags/{RECONCILE}/dagRuns/{started['dag_run_id']}")


def open_breaks(stack: Stack) -> dict[tuple[str, str, str], int]:
    """The open breaks by (reason, account, reference or request): their ids."""
    with stack.engine.connect() as conn:
        found = conn.exec_driver_sql(
            "SELECT reason, account, coalesce(statement_reference, request_id), break_id"
            " FROM open_breaks"
        ).all()
    return {(reason, account, ref): break_id for reason, account, ref, break_id in found}


def worked(stack: Stack) -> tuple[int, ...]:
    """What people's work on breaks has written: history steps, matches, event files."""
    return (
        stack.scalar("SELECT count(*) FROM ledger_recon_break_history"),
        stack.scalar("SELECT count(*) FROM ledger_recon_matches"),
        len(list((stack.data_dir / "inbox").glob("*.jsonl"))),
        len(stack.api("GET", f"/api/v2/dags/{RECONCILE}/dagRuns")["dag_runs"]),
    )


def actions(stack: Stack, break_id: int) -> list[tuple[str, dict[str, Any]]]:
    """Every action of the workbench, on `break_id`, as a form would post it."""
    return [
        ("/ledger/breaks/match", {"break_id": [break_id], "note": "n"}),
        (f"/ledger/breaks/{break_id}/write-off", {"note": "n"}),
        ("/ledger/reconcile", {"source": SOURCE}),
    ]


# --- The statement lands, reconciliation runs ---------------------------------------------------


def test_a_landed_statement_starts_the_reconciliation_which_opens_the_breaks(
    stack: Stack, reconciled: dict[str, Any]
) -> None:
    assert reconciled["run_type"] == "asset_triggered" and reconciled["state"] == "success"
    assert set(open_breaks(stack)) == OPENED


# --- Who may do what ----------------------------------------------------------------------------


def test_without_a_login_every_page_and_action_is_refused(
    stack: Stack, reconciled: dict[str, Any]
) -> None:
    some = next(iter(open_breaks(stack).values()))
    before = worked(stack)
    for path in ("/ledger/breaks", f"/ledger/breaks/{some}"):
        code, _, body = fetch(stack.url + path)
        assert (code, json.loads(body)) == (401, {"detail": "Not authenticated"}), path
    for path, form in actions(stack, some):
        code, _, _ = fetch(stack.url + path, form=form)
        assert code == 401, path
    assert worked(stack) == before


def test_a_read_only_user_reads_the_breaks_and_may_do_nothing(
    stack: Stack, reconciled: dict[str, Any]
) -> None:
    viewer = {"Authorization": f"Bearer {stack.token('viewer')}"}
    some = open_breaks(stack)[("missing_in_ledger", "alice", "R9")]
    before = worked(stack)

    code, _, queue = fetch(stack.url + "/ledger/breaks", viewer)
    assert code == 200 and b"7 open in all" in queue
    assert b"(read only)" in queue and b"Match chosen breaks" not in queue
    code, _, page = fetch(stack.url + f"/ledger/breaks/{some}", viewer)
    assert code == 200 and b"12.00 EUR" in page and b"Write off</button>" not in page

    for path, form in actions(stack, some):
        code, _, body = fetch(stack.url + path, viewer, form)
        assert code == 403 and b"may read the breaks but not work them" in body, path
    assert worked(stack) == before


def test_forms_from_another_site_or_without_the_pages_key_are_refused(
    stack: Stack, reconciled: dict[str, Any]
) -> None:
    session = {"Cookie": f"_token={stack.token('admin')}"}  # as the browser holds it
    some = open_breaks(stack)[("missing_in_ledger", "bob", "R8")]
    before = worked(stack)
    for path, form in actions(stack, some):
        refusals = {
            "no key": fetch(stack.url + path, session, form),
            "a wrong key": fetch(stack.url + path, session, form | {"form_key": "0" * 64}),
            "another origin": fetch(
                stack.url + path, session | {"Origin": "http://127.0.0.1:1"}, form
            ),
            "cross-site": fetch(stack.url + path, session | {"Sec-Fetch-Site": "cross-site"}, form),
        }
        assert {why: code for why, (code, _, _) in refusals.items()} == dict.fromkeys(
            refusals, 403
        ), path
    assert worked(stack) == before


def test_unknown_and_malformed_breaks_get_a_clear_refusal(
    stack: Stack, reconciled: dict[str, Any]
) -> None:
    admin = {"Authorization": f"Bearer {stack.token('admin')}", "Accept": "text/html"}
    some = open_breaks(stack)[("missing_in_ledger", "alice", "R9")]
    before = worked(stack)

    code, _, body = fetch(stack.url + "/ledger/breaks/987654", admin)
    assert code == 404 and b"no break 987654" in body
    code, _, body = fetch(stack.url + "/ledger/breaks/987654/write-off", admin, {"note": "n"})
    assert code == 404 and b"no break 987654" in body
    code, _, body = fetch(stack.url + "/ledger/breaks/x%3Cb%3E", admin)
    assert code == 400 and b"<b>" not in body
    form = {"break_id": [some, 987654], "note": "n", "from_break": some}
    code, _, body = fetch(stack.url + "/ledger/breaks/match", admin, form)
    assert code == 409 and b"Refused: no break 987654" in body
    code, _, body = fetch(stack.url + "/ledger/breaks?min_age_days=-1", admin)
    assert code == 400
    assert worked(stack) == before


# --- A person works the breaks, in the browser ------------------------------------------------


def logged_in(page: Page, stack: Stack, path: str) -> None:
    page.goto(stack.url + path)
    page.get_by_label("Username").fill(stack.user)
    page.get_by_label("Password").fill(stack.password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"**{path}")


def shown_message(frame: FrameLocator) -> str:
    return frame.get_by_role("status").inner_text()


def test_in_the_browser_a_person_works_the_breaks_to_closure(
    stack: Stack, reconciled: dict[str, Any], page: Page
) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    breaks = open_breaks(stack)
    unknown, unbooked = (
        breaks[("missing_in_ledger", "alice", "R9")],
        breaks[("missing_in_statement", "alice", "d3")],
    )
    mismatch = breaks[("amount_mismatch", "alice", "R2")]
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    logged_in(page, stack, "/dags")
    console: list[ConsoleMessage] = []
    page.on("console", lambda message: console.append(message))

    # The Breaks entry of the navigation shows the queue inside Airflow's UI.
    page.get_by_role("link", name="Breaks", exact=True).click()
    queue = page.frame_locator("iframe").first
    queue.get_by_role("heading", name="Open breaks").wait_for()
    assert queue.get_by_role("row").count() == 1 + len(OPENED)
    assert queue.get_by_role("cell", name=HOSTILE, exact=True).count() == 2, "shown as text"
    page.screenshot(path=ARTIFACTS / "workbench-queue.png", full_page=True)

    # Filtered to alice, oldest first; her R9 entry and d3 movement matched by hand.
    queue.get_by_label("Account starts with").fill("alice")
    queue.get_by_role("button", name="Filter").click()
    expect(queue.get_by_role("row")).to_have_count(1 + 3)
    queue.get_by_role("link", name=str(unknown), exact=True).click()
    queue.get_by_role("heading", name=f"Break {unknown}: missing in the ledger").wait_for()
    assert "12.00 EUR" in queue.get_by_label("Statement entry").inner_text()
    queue.get_by_label(f"Match with break {unbooked}").check()
    queue.locator("#match-note").fill("R9 is d3: the bank added its 5.00 fee <b>again</b>")
    queue.get_by_role("button", name="Match by hand").click()
    assert shown_message(queue) == "Matched by hand."
    assert "resolved: manual match" in queue.locator(".badge").inner_text()
    history = queue.get_by_role("table", name="History").inner_text()
    assert "admin@airflow" in history and "fee <b>again</b>" in history, "the note, as text"
    page.screenshot(path=ARTIFACTS / "workbench-matched.png", full_page=True)

    # R2, 55.00 on the statement against 50.00 in the ledger, written off.
    queue.get_by_role("link", name="Open breaks").click()
    queue.get_by_role("link", name=str(mismatch), exact=True).click()
    assert "+5.00 EUR" in queue.get_by_label("Write off").inner_text()
    queue.locator("#write-off-note").fill("the bank's 5.00 charge, agreed with treasury")
    queue.get_by_role("button", name="Write off").click()
    assert shown_message(queue).startswith("Write-off posted")
    pending = queue.locator("#write-off-state").inner_text()
    assert pending.startswith("Write-off pending") and "pipeline" in pending
    page.screenshot(path=ARTIFACTS / "workbench-write-off.png", full_page=True)

    # The pipeline commits the adjusting event; a reconciliation started here settles it.
    run = stack.api("POST", f"/api/v2/dags/{PIPELINE}/dagRuns", {"logical_date": None})
    assert stack.wait_for_run(run["dag_run_id"])[0] == "success"
    queue.get_by_role("link", name="Open breaks").click()
    queue.get_by_role("button", name=f"Reconcile {SOURCE}").click()
    started = re.search(r"run (manual__\S+) \(", shown_message(queue))
    assert started, shown_message(queue)
    # Post/redirect/get: the page after the POST is a GET's, which Airflow's UI keeps in its
    # own address; reloading the UI shows it again, where the run stands now.
    page.wait_for_url(re.compile(r"/plugin/breaks/ledger/breaks\?started="))
    page.reload()
    queue.get_by_role("heading", name="Open breaks").wait_for()
    assert started[1] in shown_message(queue)
    assert stack.wait_for_run(started[1], RECONCILE)[0] == "success"
    conf = stack.api("GET", f"/api/v2/dags/{RECONCILE}/dagRuns/{started[1]}")["conf"]
    assert conf == {"source": SOURCE}
    # The run's link, inside Airflow's frame (which may not navigate the top page), opens the
    # run in Airflow's own window: its address is the run's, and no frame holds a second UI.
    queue.get_by_role("link", name=started[1]).click()
    run_path = f"/dags/{RECONCILE}/runs/{started[1]}"
    page.wait_for_url(lambda url: unquote(urlsplit(url).path).endswith(run_path))
    page.get_by_role("heading", name=started[1]).wait_for()
    expect(page.locator("iframe")).to_have_count(0)
    page.screenshot(path=ARTIFACTS / "workbench-run.png", full_page=True)
    page.goto(f"{stack.url}/plugin/breaks/ledger/breaks")

    queue.get_by_role("link", name="Open breaks").click()
    expect(queue.get_by_role("row")).to_have_count(1 + len(OPENED) - 3)
    page.screenshot(path=ARTIFACTS / "workbench-settled.png", full_page=True)
    page.goto(f"{stack.url}/ledger/breaks/{mismatch}")
    settled = page.locator("#write-off-state").inner_text()
    assert settled.startswith("Written off") and "settled" in settled
    assert set(open_breaks(stack)) == OPENED - {
        ("amount_mismatch", "alice", "R2"),
        ("missing_in_ledger", "alice", "R9"),
        ("missing_in_statement", "alice", "d3"),
    }
    assert (
        stack.scalar(
            "SELECT string_agg(DISTINCT who, ',') FROM ledger_recon_break_history"
            " WHERE action IN ('manual_match', 'write_off_posted')"
        )
        == "admin@airflow"
    )

    assert [m for m in console if m.type == "error"] == []
    assert [u for u in requested if not u.startswith((stack.url, "blob:", "data:"))] == []


def test_a_resolved_break_may_not_be_worked_again(stack: Stack, reconciled: dict[str, Any]) -> None:
    admin = {"Authorization": f"Bearer {stack.token('admin')}", "Accept": "text/html"}
    resolved = stack.scalar(
        "SELECT break_id FROM ledger_recon_breaks WHERE reason = 'amount_mismatch'"
    )
    before = worked(stack)
    code, _, body = fetch(stack.url + f"/ledger/breaks/{resolved}/write-off", admin, {"note": "n"})
    assert code == 409 and f"Refused: break {resolved} is not open".encode() in body
    assert worked(stack) == before


@contextmanager
def hostile_site(page_html: str) -> Iterator[str]:
    """A page served from another port of this host: the same site as Airflow's, so the
    browser sends the session cookie (SameSite=Lax) with a form it posts from there."""

    class Serve(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(page_html.encode())

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Serve)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        server.server_close()


def test_a_form_another_site_makes_the_browser_post_is_refused(
    stack: Stack, reconciled: dict[str, Any], page: Page
) -> None:
    target = open_breaks(stack)[("missing_in_ledger", "bob", "R8")]
    logged_in(page, stack, "/ledger/breaks")
    before = worked(stack)
    attack = (
        f'<form id="f" method="post" action="{stack.url}/ledger/breaks/{target}/write-off">'
        '<input name="note" value="forged"></form><script>f.submit()</script>'
    )
    with hostile_site(attack) as elsewhere:
        page.goto(elsewhere)
        page.wait_for_url(f"{stack.url}/ledger/breaks/{target}/write-off")
        assert "refused: the form came from" in page.content()
    assert worked(stack) == before
