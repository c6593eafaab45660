"""`ledger airflow`: Airflow on this machine, in one command, stopped whole by Ctrl-C.

It runs the components `airflow standalone` runs (the scheduler with the LocalExecutor, the
DAG processor, the triggerer, which runs the inbox watchers, and the API server, which serves
the UI), each as an `airflow` command of its own in a session of its own
(`operations.processes`), instead of `airflow standalone` itself: standalone starts them in its
own process group, so a Ctrl-C reaches them all at once, and it left itself and defunct children
running until a SIGTERM. Here the Ctrl-C (or a SIGTERM, or a hang-up) reaches only this
process, which stops every process the stack started and exits 0.

The stack is set up for a small machine and for this project:

- `AIRFLOW_HOME` is `LEDGER_AIRFLOW_HOME` (`var/airflow`): Airflow's config (written on the
  first start, with its secrets), its metadata database (SQLite, unless
  `AIRFLOW__DATABASE__SQL_ALCHEMY_CONN` names another), its logs, the generated logins (an
  `admin` and a read-only `viewer`, unless `AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS` names
  others); each
  component's own output goes to `logs/stack/<component>.log` in it;
- the DAGs folder is the project's `dags/`, without Airflow's examples; new DAGs start paused;
- the API server listens on 127.0.0.1 only, at `LEDGER_AIRFLOW_PORT` (0: a free port), with
  one worker; the log servers on free ports (they listen on every interface: Airflow has no
  setting for that);
- `LEDGER_AIRFLOW_PARALLELISM` task instances at once (each may hold a Spark driver), one DAG
  parsing process;
- the tasks see the ledger's settings as this command resolved them: absolute folders and
  files (a `LEDGER_APP` file, `LEDGER_RECONCILIATION`), and `LEDGER_DATABASE_URL` (the
  embedded PostgreSQL, started here before Airflow when no URL is set, so that it is no part of
  the stack and keeps running after it), so they reach the same ledger as `ledger run` from
  here;
- every component runs from Airflow's home, not from where this command runs: `python -m`
  puts its working folder on `sys.path`, and the project's root holds the metadata an editable
  install leaves there (`ledger_engine.egg-info`), a second copy of the `airflow.plugins` entry
  point, which Airflow would show on its Home page as a plugin import error ("Plugin 'ledger'
  already registered"). A `LEDGER_APP` module must be importable (installed, or on
  `PYTHONPATH`); a file is named by its path.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType

from sqlalchemy import make_url

from ledger_engine.config import PROJECT_ROOT, Settings
from ledger_engine.operations.processes import ProcessGroup, describe

DAGS_FOLDER = PROJECT_ROOT / "dags"
HOST = "127.0.0.1"
COMPONENTS = ("scheduler", "dag-processor", "triggerer", "api-server")
# What the health endpoint reports on, besides the metadata database.
HEARTBEATS = {
    "scheduler": "latest_scheduler_heartbeat",
    "triggerer": "latest_triggerer_heartbeat",
    "dag_processor": "latest_dag_processor_heartbeat",
}
# The simple auth manager's users (name:role): one who may do everything, and one who may only
# read (the UI and the ledger's pages, no trigger, no action). Airflow generates their
# passwords on the first start; the command prints them.
USERS = "admin:admin,viewer:viewer"
ROLE_NOTES = {"viewer": " (read only)"}
READY_TIMEOUT_SECONDS = 300.0  # a cold start takes 10 to 25 s on a busy 2-core machine
STOP_GRACE_SECONDS = 30.0  # for a running task to be told, and the components to end
POLL_SECONDS = 0.5
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
STOP_REQUESTED = "stop requested"  # why a wait ended that is no failure

Say = Callable[[str], None]


@dataclass(frozen=True)
class StackPorts:
    """The API server's port and the two log servers'."""

    api: int
    worker_logs: int
    trigger_logs: int

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.api}"


def free_port() -> int:
    """A TCP port nothing listens on now (the system's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((HOST, port))
        except OSError:
            return True
    return False


def choose_ports(settings: Settings) -> StackPorts:
    """The configured API port (or a free one for 0) and free ports for the log servers."""
    api = settings.airflow_port or free_port()
    return StackPorts(api=api, worker_logs=free_port(), trigger_logs=free_port())


def airflow_environment(
    settings: Settings, ports: StackPorts, database_url: str, base: Mapping[str, str]
) -> dict[str, str]:
    """The environment of every component: `base` (the caller's, so that other `AIRFLOW__*`
    settings still apply), Airflow set up as the module's docstring says, and the ledger's
    settings resolved."""
    home = settings.airflow_home
    env = {key: value for key, value in base.items() if key != "AIRFLOW_CONFIG"}
    venv_bin = str(Path(sys.executable).parent)
    return env | {
        # This interpreter's `airflow` and Python, for Airflow and Spark's Python workers.
        "PATH": os.pathsep.join(filter(None, [venv_bin, env.get("PATH")])),
        "PYSPARK_PYTHON": env.get("PYSPARK_PYTHON") or sys.executable,
        "AIRFLOW_HOME": str(home),
        # SQLite in the home, unless the caller chose a database (PostgreSQL, say).
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": (
            env.get("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN") or f"sqlite:///{home / 'airflow.db'}"
        ),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS_FOLDER),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__AUTH_MANAGER": (
            "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
        ),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": (
            env.get("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS") or USERS
        ),
        "AIRFLOW__CORE__PARALLELISM": str(settings.airflow_parallelism),
        # Workers reach the API server here to run tasks; its default assumes port 8080.
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{ports.url}/execution/",
        "AIRFLOW__API__HOST": HOST,
        "AIRFLOW__API__PORT": str(ports.api),
        "AIRFLOW__API__BASE_URL": ports.url,
        "AIRFLOW__API__WORKERS": "1",
        "AIRFLOW__DAG_PROCESSOR__PARSING_PROCESSES": "1",
        "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(ports.worker_logs),
        "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(ports.trigger_logs),
        "LEDGER_DATABASE_URL": database_url,
        "LEDGER_DATA_DIR": str(settings.data_dir),
        "LEDGER_INBOX": str(settings.inbox),
        "LEDGER_CHECKPOINT": str(settings.checkpoint),
        "LEDGER_PGDATA": str(settings.pgdata),
        "LEDGER_REPORTS": str(settings.reports),
        "LEDGER_STATEMENTS": str(settings.statements),
        "LEDGER_EXPECTATIONS": str(settings.expectations.resolve()),
        "LEDGER_APP": app_by_absolute_path(settings.app),
    } | (
        {"LEDGER_RECONCILIATION": str(settings.reconciliation.resolve())}
        if settings.reconciliation
        else {}
    )


def app_by_absolute_path(app: str) -> str:
    """`LEDGER_APP` as the components, which run elsewhere, find it: a `file.py:function`
    with the file's absolute path; a `module:function` as it is."""
    module, _, function = app.rpartition(":")
    if not module.endswith(".py"):
        return app
    return f"{Path(module).resolve()}:{function}"


def health(url: str) -> dict | None:
    """What the API server's health endpoint says, or None if it does not answer yet."""
    try:
        with urllib.request.urlopen(f"{url}/api/v2/monitor/health", timeout=5) as response:
            return json.load(response)
    except (urllib.error.URLError, OSError, ValueError):
        return None


def is_ready(report: dict | None, since: datetime) -> bool:
    """Whether the health report shows the metadata database and each component healthy,
    with a heartbeat since `since` (a component of an earlier stack killed moments ago looks
    alive for a while)."""
    if not report or report.get("metadatabase", {}).get("status") != "healthy":
        return False
    for component, heartbeat in HEARTBEATS.items():
        part = report.get(component) or {}
        beat = part.get(heartbeat)
        if part.get("status") != "healthy" or not beat:
            return False
        if datetime.fromisoformat(beat) < since:
            return False
    return True


def generated_logins(home: Path) -> dict[str, str]:
    """The simple auth manager's users and generated passwords (written by the API server)."""
    try:
        return json.loads((home / "simple_auth_manager_passwords.json.generated").read_text())
    except (FileNotFoundError, ValueError):
        return {}


class StopRequest:
    """SIGINT, SIGTERM and SIGHUP as a request to stop: the first sets `requested`, the next
    cuts the stop's grace period short (`hurry`)."""

    def __init__(self, hurry: threading.Event) -> None:
        self.requested = threading.Event()
        self.hurry = hurry
        self._previous: dict[int, object] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested.is_set():
            self.hurry.set()
        self.requested.set()

    def __enter__(self) -> StopRequest:
        for sig in STOP_SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def log_tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


class AirflowStack:
    """The components, their environment and logs; `run()` is the whole command."""

    def __init__(self, settings: Settings, say: Say) -> None:
        self.settings = settings
        self.say = say
        self.group = ProcessGroup()
        self.logs = settings.airflow_home / "logs" / "stack"

    def start_airflow(self, component: str, env: Mapping[str, str]) -> subprocess.Popen:
        """Start `airflow <component>` (`component` may hold arguments) as the stack starts
        each of its components, its output in `logs/stack/<component>.log`."""
        command = [sys.executable, "-m", "airflow", *component.split()]
        name = component.replace(" ", "-")
        # From Airflow's home, never from where this command runs (the module's docstring).
        home = self.settings.airflow_home
        return self.group.start(name, command, env, self.logs / f"{name}.log", home)

    def _wait(self, stop: StopRequest, done: Callable[[], bool], timeout: float) -> str | None:
        """Wait until `done()`; why not, if it does not come: a stop request, a component
        that ended, or the timeout."""
        deadline = time.monotonic() + timeout
        while not done():
            if stop.requested.is_set():
                return STOP_REQUESTED
            if ended := self._ended():
                return "ended: " + ", ".join(f"{n} (exit {c})" for n, c in ended.items())
            if time.monotonic() > deadline:
                return f"not ready after {timeout:.0f} s"
            time.sleep(POLL_SECONDS)
        return None

    def _ended(self) -> dict[str, int]:
        """The components that ended (they are meant to run until stopped)."""
        return {n: c for n, c in self.group.exited().items() if n in COMPONENTS}

    def run(self) -> int:
        """Start the stack, print where and how to log in, serve until told to stop, stop
        everything; 0 when stopped on request with no process left."""
        with StopRequest(self.group.hurry) as stop:
            try:
                outcome = self._serve(stop)
            finally:
                left = self._stop()
        if left:
            return 1
        return 0 if outcome is None else 1

    def _serve(self, stop: StopRequest) -> str | None:
        """Start, then wait for the stop request (which may come at any point); a reason if
        the stack failed instead."""
        started = time.monotonic()
        env = self._prepare()
        if env is None:
            return "not started"
        self.say(f"migrating Airflow's metadata database ({self.settings.airflow_home})")
        self.start_airflow("db migrate", env)
        migrated = self.group.started["db-migrate"]
        why = self._wait(stop, lambda: migrated.poll() is not None, float("inf"))
        if why is None and migrated.returncode != 0:
            why = f"db migrate exited {migrated.returncode}"
        if why is not None:
            return self._failed(why)
        self.say(f"starting {', '.join(COMPONENTS)} (their output: {self.logs})")
        since = datetime.now(UTC)
        for component in COMPONENTS:
            self.start_airflow(component, env)
        url = env["AIRFLOW__API__BASE_URL"]
        why = self._wait(stop, lambda: is_ready(health(url), since), READY_TIMEOUT_SECONDS)
        if why is not None:
            return self._failed(why)
        self._announce(url, time.monotonic() - started)
        return self._failed(self._wait(stop, lambda: False, float("inf")))

    def _prepare(self) -> dict[str, str] | None:
        """The components' environment, once the database is up; None if the port is taken."""
        from ledger_engine.store.database import database_url

        settings = self.settings
        if not DAGS_FOLDER.is_dir():
            self.say(f"no DAGs folder at {DAGS_FOLDER}: run from a checkout of the project")
            return None
        if settings.airflow_port and port_in_use(settings.airflow_port):
            self.say(
                f"port {settings.airflow_port} on {HOST} is in use: choose another with"
                " LEDGER_AIRFLOW_PORT or --port (0: any free port)"
            )
            return None
        settings.airflow_home.mkdir(parents=True, exist_ok=True)
        # Started here, not by a task: the embedded server outlives the stack.
        url = database_url(settings)
        where = (
            make_url(url).render_as_string(hide_password=True)
            if settings.database_url
            else f"the embedded PostgreSQL in {settings.pgdata} (`ledger db stop` stops it)"
        )
        self.say(f"ledger database: {where}; inbox: {settings.inbox}")
        return airflow_environment(settings, choose_ports(settings), url, os.environ)

    def _announce(self, url: str, seconds: float) -> None:
        self.say(f"Airflow is ready in {seconds:.0f} s: {url}")
        logins = generated_logins(self.settings.airflow_home)
        for user, password in logins.items():
            self.say(f"login: {user} / {password}{ROLE_NOTES.get(user, '')}")
        if not logins:
            self.say("login: see [core] simple_auth_manager_users in Airflow's config")
        self.say(
            f"DAGs from {DAGS_FOLDER} (new ones start paused: switch them on in the UI);"
            f" parallelism {self.settings.airflow_parallelism}"
        )
        self.say("Ctrl-C stops Airflow and every process it started")

    def _failed(self, why: str) -> str | None:
        """`why` the stack stopped, told with the end of the logs of what ended; None for a
        stop request, which is no failure."""
        if why == STOP_REQUESTED:
            return None
        self.say(f"Airflow did not run: {why}")
        for name, code in self.group.exited().items():
            if name not in COMPONENTS and code == 0:
                continue
            self.say(f"--- end of {self.logs / f'{name}.log'} ---")
            self.say(log_tail(self.logs / f"{name}.log"))
        return why

    def _stop(self) -> list:
        if not self.group.started:
            return []
        self.say("stopping Airflow (Ctrl-C again: do not wait for a clean stop)")
        stopped = time.monotonic()
        left = self.group.stop(STOP_GRACE_SECONDS, say=self.say)
        if left:
            self.say(f"still running after SIGKILL: {describe(left)}")
        else:
            self.say(f"stopped in {time.monotonic() - stopped:.1f} s; no process left")
        return left


def run_airflow(settings: Settings, say: Say) -> int:
    """The `ledger airflow` command's body."""
    return AirflowStack(settings, say).run()
