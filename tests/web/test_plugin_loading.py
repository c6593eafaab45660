"""Airflow loads every plugin in every task process (for the plugins' macros): loading the
ledger's plugin there imports neither the pages' web application nor Airflow's API server,
which only the API server needs. And Airflow run from the project's root, after the set-up,
finds the plugin once: no "Plugin Import Error" on its Home page."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ledger_engine.config import PROJECT_ROOT
from tests.support.airflow_stack import inherited_environment
from tests.support.plugin_registration import LISTING, listed_plugins, logged_problems

LOAD = """
import json, sys
from ledger_engine.web.plugin import LedgerPlugin
heavy = ("ledger_engine.web.app", "ledger_engine.web.access", "airflow.api_fastapi.app")
print(json.dumps([LedgerPlugin.name, [m for m in heavy if m in sys.modules]]))
"""


def test_loading_the_plugin_imports_no_web_application() -> None:
    done = subprocess.run(
        [sys.executable, "-c", LOAD], capture_output=True, text=True, timeout=120, check=True
    )

    assert json.loads(done.stdout.strip().splitlines()[-1]) == ["ledger", []]


def test_airflow_run_from_the_project_root_after_the_set_up_registers_the_plugin_once(
    tmp_path: Path,
) -> None:
    # `python -m` puts the folder it runs from on `sys.path`, where a copy of the ledger's
    # metadata left by the editable install (scripts/setup.sh removes it) would be found too.
    done = subprocess.run(
        [sys.executable, "-m", "airflow", *LISTING],
        cwd=PROJECT_ROOT,
        env=inherited_environment()
        | {"AIRFLOW_HOME": str(tmp_path), "AIRFLOW__CORE__LOAD_EXAMPLES": "False"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]

    assert listed_plugins(done.stdout) == ["ledger"]
    assert logged_problems(done.stderr) == []
