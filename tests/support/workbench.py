"""The breaks workbench, served (`workbench_server`) on a database of its own with the breaks of
one small reconciliation, and a client that uses it as a browser does: with a user's session
cookie, posting forms with the key their page carries, following no redirect by itself.

The ledger: three deposits to alice (R1 100.00, R2 50.00, R3 7.00). Her bank statement: R1
100.00 (matched), R2 55.00 (an amount mismatch), R9 12.00 and R8 20.00 (missing in the
ledger), R1 100.00 again (a duplicate); R3 is missing in the statement. `BREAKS` names the
breaks by (reason, reference or request).

    with served_workbench(database_url, tmp_path) as bench:
        queue = bench.get("/ledger/breaks")
        done = bench.post(f"/ledger/breaks/{bench.breaks[R9]}/write-off", {"note": "why"})
"""

from __future__ import annotations

import copy
import html
import json
import re
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import Engine, make_url

from bench.databases import create_database, drop_database
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.reconcile.matching.reference import match
from ledger_engine.reconcile.run import reconcile
from ledger_engine.reconcile.sources import Sources, load_sources
from ledger_engine.reconcile.statement_inbox import land_statement
from ledger_engine.store.database import connect
from tests.support.airflow_stack import REPO_ROOT, inherited_environment
from tests.support.bank import deposit
from tests.support.database import rows
from tests.support.events import event_file
from tests.support.serial_commit import SerialCommits

SOURCE = "bank"
ACCOUNT = "alice"
SOURCES_TOML = f"""
version = 1

[sources.{SOURCE}]
format = "csv"
table = "accounts"
currency = "EUR"
precision = 2
account = "{ACCOUNT}"

[sources.{SOURCE}.csv.columns]
booking_date = "Date"
amount = "Amount"
reference = "Ref"

[[sources.{SOURCE}.rules]]
name = "same reference"
reference = {{ similarity = 1.0 }}
amount = {{ tolerance = 5 }}

[sources.{SOURCE}.write_off]
stream = "adjustments"
account = "account_id"
amount = "amount"
reference = "reference"
description = "description"
"""
MOVEMENTS = [
    deposit("d1", ACCOUNT, 10_000, reference="R1", value_date="2026-11-02"),
    deposit("d2", ACCOUNT, 5_000, reference="R2", value_date="2026-11-03"),
    deposit("d3", ACCOUNT, 700, reference="R3", value_date="2026-11-03"),
]
STATEMENT = (
    b"Date,Amount,Ref\n2026-11-02,100.00,R1\n2026-11-03,55.00,R2\n2026-11-04,12.00,R9\n"
    b"2026-11-02,100.00,R1\n2026-11-05,20.00,R8\n"
)
# The breaks the statement opens: (reason, the statement's reference or the ledger's request).
MISMATCH = ("amount_mismatch", "R2")
R9 = ("missing_in_ledger", "R9")
R8 = ("missing_in_ledger", "R8")
DUPLICATE = ("duplicate", "R1")
D3 = ("missing_in_statement", "d3")
START_TIMEOUT = 60  # seconds for the server to answer


@dataclass
class Workbench:
    """The served workbench and what it works on."""

    url: str
    engine: Engine
    sources: Sources
    statements: Path
    inbox: Path
    tokens: dict[str, str]
    commits: SerialCommits
    breaks: dict[tuple[str, str], int] = field(default_factory=dict)

    def get(self, path: str, user: str | None = "admin", **headers: str) -> httpx.Response:
        """A GET of `path` as a browser of `user` (None: no session) asks for a page."""
        return self._send("GET", path, user, None, headers)

    def post(
        self, path: str, form: dict[str, Any], user: str | None = "admin", **headers: str
    ) -> httpx.Response:
        """A POST of `form` (a list value: a repeated field) to `path` from a page of
        `user`'s session, with that page's form key."""
        return self._send("POST", path, user, form | {"form_key": self.form_key(user)}, headers)

    def form_key(self, user: str | None) -> str:
        """The form key the workbench's pages give `user`'s session (read off the queue)."""
        if user is None:
            return ""
        page = self.get("/ledger/breaks", user).text
        found = re.search(r'name="form_key" value="([0-9a-f]*)"', page)
        assert found, "the queue carries a form key"
        return found[1]

    def _send(
        self, method: str, path: str, user: str | None, form: dict | None, headers: dict
    ) -> httpx.Response:
        cookies = {"_token": self.tokens[user]} if user else {}
        with httpx.Client(base_url=self.url, cookies=cookies, timeout=30) as client:
            return client.request(
                method, path, data=form, headers={"Accept": "text/html"} | headers
            )

    def commit_inbox(self) -> None:
        """Commit the event files waiting in the inbox (adjusting events) as the next batch."""
        files = sorted(self.inbox.glob("*.jsonl"))
        self.commits.commit([(f.name, f.read_bytes()) for f in files])
        for f in files:
            f.unlink()

    def reconcile(self) -> None:
        """A reconciliation run of the source, as the DAG runs it (by the reference matcher)."""
        reconcile(self.engine, self.sources, self.statements, match, who="run")

    def status(self, break_id: int) -> tuple[str, str | None]:
        """The break's status and resolution, as stored."""
        ((status, resolution),) = rows(
            self.engine,
            "SELECT status, resolution FROM ledger_recon_breaks WHERE break_id = :b",
            b=break_id,
        )
        return status, resolution

    def worked(self) -> tuple[int, int, int]:
        """What work on breaks has written: history steps, matches, event files."""
        ((steps,),) = rows(self.engine, "SELECT count(*) FROM ledger_recon_break_history")
        ((matches,),) = rows(self.engine, "SELECT count(*) FROM ledger_recon_matches")
        return steps, matches, len(list(self.inbox.glob("*.jsonl")))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _server_env(database_url: str, work: Path, sources_file: Path) -> dict[str, str]:
    home = work / "airflow"
    home.mkdir()
    return inherited_environment() | {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__AUTH_MANAGER": (
            "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
        ),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin,viewer:viewer",
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(16),
        "AIRFLOW__API__SECRET_KEY": secrets.token_hex(16),
        "LEDGER_DATABASE_URL": database_url,
        "LEDGER_DATA_DIR": str(work / "ledger"),
        "LEDGER_RECONCILIATION": str(sources_file),
        "PYTHONPATH": str(REPO_ROOT),
    }


def _wait_for_tokens(server: subprocess.Popen, output: Path, url: str) -> dict[str, str]:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        printed = output.read_text(encoding="utf-8", errors="replace")
        said = re.search(r"^tokens (\{.*\})$", printed, re.MULTILINE)
        if said:
            try:
                httpx.get(url + "/ledger/breaks", timeout=5)
                return json.loads(said[1])
            except httpx.TransportError:
                pass
        assert server.poll() is None and time.monotonic() < deadline, printed[-3000:]
        time.sleep(0.2)


@dataclass
class _Seed:
    """The ledger every workbench starts from: its database (a template, no one connected),
    its sources, folders and batches, and its breaks."""

    url: str
    sources: Sources
    statements: Path
    inbox: Path
    commits: SerialCommits
    breaks: dict[tuple[str, str], int]


def _seeded(database_url: str, work: Path, sources_file: Path) -> _Seed:
    """The deposits committed and the statement reconciled into `database_url`."""
    ledger = build_ledger()
    engine = connect(database_url)
    sources = load_sources(sources_file, ledger.tables, ledger.streams)
    statements, inbox = work / "ledger" / "statements", work / "ledger" / "inbox"
    inbox.mkdir(parents=True)
    try:
        commits = SerialCommits(engine, ledger)
        commits.commit([("b0.jsonl", event_file(MOVEMENTS))])
        land_statement(statements, sources.sources[SOURCE], "s1.csv", STATEMENT)
        reconcile(engine, sources, statements, match, who="run")
        found = rows(
            engine,
            "SELECT reason, coalesce(statement_reference, request_id), break_id FROM open_breaks",
        )
    finally:
        engine.dispose()  # a template: no one may be connected
    breaks = {(reason, ref): break_id for reason, ref, break_id in found}
    return _Seed(database_url, sources, statements, inbox, commits, breaks)


@dataclass
class WorkbenchServer:
    """The workbench's server, on a database of its own that each `fresh` workbench makes
    a new copy of the seed (the server's connections are cut and made again, as a database
    restart would)."""

    url: str
    tokens: dict[str, str]
    live_url: str
    seed: _Seed

    @contextmanager
    def fresh(self) -> Iterator[Workbench]:
        """The workbench as the seed left it: its database copied anew, its inbox empty."""
        maintenance = _maintenance_url(self.live_url)
        drop_database(maintenance, make_url(self.live_url).database)
        create_database(
            maintenance, make_url(self.live_url).database, template=make_url(self.seed.url).database
        )
        for landed in self.seed.inbox.glob("*.jsonl"):
            landed.unlink()
        engine = connect(self.live_url)
        commits = copy.copy(self.seed.commits)  # the next batch, on the seed's ledger state
        commits.run = copy.deepcopy(self.seed.commits.run)
        commits.engine = engine
        seed = self.seed
        try:
            yield Workbench(
                self.url,
                engine,
                seed.sources,
                seed.statements,
                seed.inbox,
                self.tokens,
                commits,
                dict(seed.breaks),
            )
        finally:
            engine.dispose()


def _maintenance_url(database_url: str) -> str:
    """The server's maintenance database (to create and drop others from)."""
    return (
        make_url(database_url)
        .set(database="postgres", query={})
        .render_as_string(hide_password=False)
    )


@contextmanager
def running_workbench(database_url: str, work: Path) -> Iterator[WorkbenchServer]:
    """The workbench served on a copy of the database of `database_url` (a fresh, migrated
    one, which becomes the seed: the ledger's deposits committed and the statement
    reconciled), its data folders under `work`; the server stopped and its copy dropped
    afterwards."""
    sources_file = work / "reconciliation.toml"
    sources_file.write_text(SOURCES_TOML, encoding="utf-8")
    live = f"{make_url(database_url).database}_served"
    live_url = make_url(database_url).set(database=live).render_as_string(hide_password=False)
    port, output = _free_port(), work / "workbench-server.out"
    with output.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "tests.support.workbench_server", str(port)],
            env=_server_env(live_url, work, sources_file),
            cwd=work,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        seed = _seeded(database_url, work, sources_file)
        create_database(_maintenance_url(live_url), live, template=make_url(database_url).database)
        url = f"http://127.0.0.1:{port}"
        yield WorkbenchServer(url, _wait_for_tokens(server, output, url), live_url, seed)
    finally:
        server.kill()  # a test's server: nothing of it to keep
        server.wait(timeout=30)
        drop_database(_maintenance_url(live_url), live)


@contextmanager
def served_workbench(database_url: str, work: Path) -> Iterator[Workbench]:
    """One workbench, served on a copy of `database_url` (see `running_workbench`)."""
    with running_workbench(database_url, work) as server, server.fresh() as bench:
        yield bench


def section(page: str, label: str) -> str | None:
    """The markup of the page's section `label` (its `aria-label`), or None if it has none."""
    found = re.search(rf'<section aria-label="{re.escape(label)}">(.*?)</section>', page, re.DOTALL)
    return found[1] if found else None


def shown_text(markup: str) -> str:
    """Markup as a person reads it: tags dropped, entities read, white space made one."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())


def offered(markup: str) -> set[int]:
    """The breaks a form's ticks offer (`break_id` check boxes)."""
    return {
        int(value) for value in re.findall(r'type="checkbox" name="break_id" value="(\d+)"', markup)
    }


def ticked(markup: str) -> set[int]:
    """The breaks a form's ticks hold ticked (`break_id` check boxes marked `checked`)."""
    return {
        int(value)
        for value in re.findall(
            r'type="checkbox" name="break_id" value="(\d+)"[^>]*\bchecked\b', markup
        )
    }


def typed_note(markup: str, field_id: str) -> str | None:
    """The text a page's note field (`<textarea id=field_id>`) holds, or None without one."""
    found = re.search(rf'<textarea id="{re.escape(field_id)}"[^>]*>(.*?)</textarea>', markup, re.S)
    return html.unescape(found[1]) if found else None
