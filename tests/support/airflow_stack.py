"""`ledger airflow` as the tests run it: the command started in a session of its own on a
fresh data folder and database, what it printed, calls to Airflow's REST API with the logins
it printed, the processes it started (told from `/proc`), pages fetched as sent, and Debian's
Chromium driven by Playwright.

Which processes the stack started is told from `/proc`, independently of the command's own
bookkeeping: every process it starts, and all their descendants, carry `_LEDGER_STACK=<the
command's pid>` in their environment (ledger_engine/operations/processes.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from playwright.sync_api import Page
from sqlalchemy import Engine

from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.store.database import connect, ledger_url
from tests.support.database import single_value
from tests.support.page_layout import chromium

REPO_ROOT = Path(__file__).resolve().parents[2]
PIPELINE = "ledger_pipeline"
MARKER = "_LEDGER_STACK"
START_TIMEOUT = 300  # seconds, for the stack to say it is ready
RUN_TIMEOUT = 300  # for a DAG run of a few tens of events to end
STOP_TIMEOUT = 120  # for the command to stop everything after Ctrl-C
READY = re.compile(r"Airflow is ready in \d+ s: (?P<url>http://127\.0\.0\.1:\d+)")
LOGIN = re.compile(r"login: (?P<user>\S+) / (?P<password>\S+)")


def inherited_environment() -> dict[str, str]:
    """This process's environment without any Airflow or ledger setting of the caller's."""
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AIRFLOW", "LEDGER_", "_AIRFLOW"))
    }


# --- The processes of a stack, from /proc --------------------------------------------------


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    session: int
    state: str
    command: str
    marked: bool  # started with `_LEDGER_STACK=<owner>` in its environment


def processes(owner: int) -> list[Proc]:
    """Every process there is (live or not yet reaped), and whether it carries `owner`'s
    marker. (A process that rewrote its title, as Airflow's do, shows none: the title takes
    the place of its environment in /proc.)"""
    wanted = f"{MARKER}={owner}".encode()
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            command = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:  # ended meanwhile
            continue
        try:
            marked = wanted in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
        except OSError:
            marked = False
        fields = stat[stat.rindex(")") + 2 :].split()
        state, ppid, session = fields[0], int(fields[1]), int(fields[3])
        found.append(Proc(int(entry), ppid, session, state, command.decode().strip(), marked))
    return found


def stack_sessions(owner: int) -> set[int]:
    """The sessions of `owner`'s children: each component it runs has one of its own."""
    return {p.session for p in processes(owner) if p.ppid == owner}


def stack_processes(owner: int, sessions: set[int]) -> list[Proc]:
    """The processes of `sessions`, and every process carrying `owner`'s marker (one that
    made a session of its own still carries it)."""
    return [p for p in processes(owner) if p.session in sessions or p.marked]


def listening_addresses(port: int) -> set[str]:
    """The local addresses something listens on at TCP `port` (from /proc/net/tcp{,6})."""
    addresses = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                addresses.add(address)
    return addresses


# --- The stack ------------------------------------------------------------------------------


@dataclass
class Stack:
    """`ledger airflow` running: its process, its output, what it printed, its ledger."""

    process: subprocess.Popen
    output: Path
    data_dir: Path
    url: str = ""
    user: str = ""
    password: str = ""
    logins: dict[str, str] = field(default_factory=dict)  # every printed user -> password
    engine: Engine | None = None
    sessions: set[int] = field(default_factory=set)  # the components' sessions, once ready
    _token: str = field(default="", repr=False)

    def printed(self) -> str:
        return self.output.read_text(encoding="utf-8", errors="replace")

    def api(self, method: str, path: str, body: dict | None = None) -> Any:
        """A call to Airflow's public REST API (`/api/v2`) with a token for the printed login."""
        if not self._token:
            self._token = self._call("POST", "/auth/token", self._login())["access_token"]
        return self._call(method, path, body, self._token)

    def _login(self) -> dict[str, str]:
        return {"username": self.user, "password": self.password}

    def token(self, user: str) -> str:
        """A token of Airflow's API for the printed `user`."""
        login = {"username": user, "password": self.logins[user]}
        return self._call("POST", "/auth/token", login)["access_token"]

    def _call(self, method: str, path: str, body: dict | None, token: str = "") -> Any:
        request = urllib.request.Request(
            self.url + path,
            method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Content-Type": "application/json"}
            | ({"Authorization": f"Bearer {token}"} if token else {}),
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)

    def run_states(self, run_id: str, dag_id: str = PIPELINE) -> tuple[str, dict[str, str]]:
        """A DAG run's state and its tasks' states."""
        run_path = f"/api/v2/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}"
        tasks = self.api("GET", f"{run_path}/taskInstances")["task_instances"]
        return self.api("GET", run_path)["state"], {t["task_id"]: t["state"] for t in tasks}

    def wait_for_run(self, run_id: str, dag_id: str = PIPELINE) -> tuple[str, dict[str, str]]:
        """A DAG run's state and its tasks' states once it ended."""
        deadline = time.monotonic() + RUN_TIMEOUT
        while (states := self.run_states(run_id, dag_id))[0] not in ("success", "failed"):
            assert time.monotonic() < deadline, f"run {run_id} still {states} after {RUN_TIMEOUT} s"
            time.sleep(2)
        return states

    def task_log(self, run_id: str, task_id: str, dag_id: str = PIPELINE) -> str:
        """A task's log (first try) through the REST API, as text."""
        path = (
            f"/api/v2/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}/taskInstances/{task_id}/logs/1"
        )
        content = self.api("GET", path)["content"]
        return "\n".join(str(part.get("event", part)) for part in content)

    def scalar(self, query: str) -> Any:
        return single_value(self.engine, query)


def wait_until_ready(stack: Stack) -> None:
    """Wait until the command prints the URL; fail with its output if it ends first."""
    deadline = time.monotonic() + START_TIMEOUT
    while not (ready := READY.search(stack.printed())):
        if stack.process.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"ledger airflow did not get ready:\n{stack.printed()[-5000:]}")
        time.sleep(0.5)
    stack.url = ready["url"]
    stack.logins = {m["user"]: m["password"] for m in LOGIN.finditer(stack.printed())}
    assert "admin" in stack.logins, stack.printed()
    stack.user, stack.password = "admin", stack.logins["admin"]


def kill_what_is_left(stack: Stack) -> None:
    """After a failed test: stop the command as Ctrl-C does, then kill whatever remains."""
    if stack.process.poll() is None:
        os.killpg(stack.process.pid, signal.SIGINT)
        try:
            stack.process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(stack.process.pid, signal.SIGKILL)
            stack.process.wait()
    for proc in stack_processes(stack.process.pid, stack.sessions):
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)


@contextlib.contextmanager
def running_stack(
    database_url: str, workdir: Path, settings: dict[str, str] | None = None
) -> Iterator[Stack]:
    """`ledger airflow` on a free port, started in the fresh data folder `workdir/ledger` (what
    its inbox should hold is landed before), on the database `database_url`, with the
    `LEDGER_*` `settings` given, and every process it started gone afterwards."""
    data_dir = workdir / "ledger"
    env = (
        inherited_environment()
        | {
            "LEDGER_DATABASE_URL": database_url,
            "LEDGER_DATA_DIR": str(data_dir),
            "LEDGER_SPARK_MASTER": "local[2]",
            "LEDGER_AIRFLOW_PORT": "0",
            "SPARK_LOCAL_IP": "127.0.0.1",
        }
        | (settings or {})
    )
    output = workdir / "ledger-airflow.out"
    with output.open("wb") as out:
        process = subprocess.Popen(
            [str(Path(sys.executable).with_name("ledger")), "airflow"],
            env=env,
            cwd=workdir,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # as a terminal's foreground job: Ctrl-C reaches its group
        )
    started = Stack(process, output, data_dir)
    try:
        wait_until_ready(started)
        started.sessions = stack_sessions(process.pid)
        started.engine = connect(ledger_url(database_url, build_ledger()))
        yield started
    finally:
        kill_what_is_left(started)
        if started.engine is not None:
            started.engine.dispose()


def switched_on(stack: Stack, dag_id: str) -> Stack:
    """The stack with `dag_id` switched on (new DAGs start paused), once Airflow has parsed
    it."""
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            stack.api("PATCH", f"/api/v2/dags/{dag_id}", {"is_paused": False})
            return stack
        except urllib.error.HTTPError as not_yet:  # 404 until the DAG processor parsed it
            assert not_yet.code == 404 and time.monotonic() < deadline, not_yet
            time.sleep(1)


# --- Pages as sent, and a browser -------------------------------------------------------------


class _Unfollowed(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # a redirect is an answer to look at, not to follow


def fetch(
    url: str, headers: dict[str, str] | None = None, form: dict[str, Any] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """A GET of `url` (a POST of `form`, URL-encoded; a list value is a repeated field) as
    sent: its status, headers and body, redirects not followed."""
    opener = urllib.request.build_opener(_Unfollowed)
    data = urlencode(form, doseq=True).encode() if form is not None else None
    request = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as refused:
        return refused.code, dict(refused.headers), refused.read()


@contextlib.contextmanager
def chromium_page() -> Iterator[Page]:
    """A page of headless Chromium (Debian's; Playwright drives it, downloads nothing)."""
    with chromium() as browser:
        yield browser.new_page(viewport={"width": 1280, "height": 900})


def run_badge(page: Page) -> str:
    """The state the run page shows for its run, once it is final (the page refreshes
    itself while the run goes on)."""
    badge = page.get_by_test_id("state-badge").first
    deadline = time.monotonic() + RUN_TIMEOUT
    while (shown := badge.inner_text().strip()) not in ("Success", "Failed"):
        assert time.monotonic() < deadline, f"the run still shows {shown!r}"
        page.wait_for_timeout(1000)
    return shown
