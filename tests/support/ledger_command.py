"""The `ledger` command as a person runs it from the README's set-up: `.venv/bin/ledger` in a
process of its own, its output captured (not a terminal), in an environment the test gives."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sqlalchemy import make_url

# The virtualenv's console script, beside the interpreter that runs the tests.
LEDGER = Path(sys.executable).with_name("ledger")


def ledger_env(data_dir: Path, database_url: str | None, **settings: str) -> dict[str, str]:
    """This environment with the ledger's data in `data_dir`, on `database_url` (None: the
    embedded server), no terminal width given, and `settings` (LEDGER_APP=..., ...) on top."""
    environment = {
        **os.environ,
        "LEDGER_DATA_DIR": str(data_dir),
        "LEDGER_SPARK_MASTER": "local[2]",
    }
    for inherited in ("LEDGER_DATABASE_URL", "COLUMNS", "LINES", "LEDGER_TRACEBACK"):
        environment.pop(inherited, None)
    if database_url is not None:
        environment["LEDGER_DATABASE_URL"] = database_url
    return {**environment, **settings}


def run_ledger(
    env: dict[str, str], *args: str, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """`.venv/bin/ledger *args`, waited for; stdout and stderr captured apart, as text."""
    return subprocess.run(
        [str(LEDGER), *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def said(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The non-blank lines a finished command wrote, stdout's then stderr's."""
    return [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]


def libpq_form(sqlalchemy_url: str, database: str | None = None) -> str:
    """`sqlalchemy_url` as a person writes LEDGER_DATABASE_URL (`postgresql://...`), on
    `database` where given."""
    url = make_url(sqlalchemy_url)
    # The ledger's schema (`options`) is the command's to add; a socket folder (`host`) stays.
    url = url.set(
        drivername="postgresql", query={k: v for k, v in url.query.items() if k != "options"}
    )
    if database is not None:
        url = url.set(database=database)
    return url.render_as_string(hide_password=False)
