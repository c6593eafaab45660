"""Airflow loads every plugin in every task process (for the plugins' macros): loading the
ledger's plugin there imports neither the pages' web application nor Airflow's API server,
which only the API server needs."""

from __future__ import annotations

import json
import subprocess
import sys

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
