"""How Airflow finds the ledger's plugin: a second copy of the ledger's installed metadata in
a folder, as an editable install leaves one in the project's root (`ledger_engine.egg-info`,
written by setuptools while pip builds), and what `airflow plugins --verbose` says.

Python run from a folder holding such a copy (`python -m ...` puts the folder on `sys.path`)
sees the `ledger-engine` distribution twice, and with it the `airflow.plugins` entry point:
Airflow then loads the plugin once and counts the second as an import error ("Plugin 'ledger'
already registered, skipping"), which its Home page shows in red."""

from __future__ import annotations

import json
import re
from importlib import metadata
from pathlib import Path

DISTRIBUTION = "ledger-engine"
LISTING = ("plugins", "--output", "json", "--verbose")  # `airflow plugins`, its logs shown
# A line Airflow logs at warning level or above ("... [warning  ] Plugin 'ledger' ...").
PROBLEM = re.compile(r"\[(warning|error|critical)\s*\]")


def metadata_copy(folder: Path) -> Path:
    """`folder` holding `ledger_engine.egg-info` with the installed distribution's name,
    version and entry points; the copy's path."""
    installed = metadata.distribution(DISTRIBUTION)
    copy = folder / "ledger_engine.egg-info"
    copy.mkdir(parents=True)
    (copy / "PKG-INFO").write_text(
        f"Metadata-Version: 2.1\nName: {DISTRIBUTION}\nVersion: {installed.version}\n"
    )
    (copy / "entry_points.txt").write_text(installed.read_text("entry_points.txt") or "")
    return copy


def listed_plugins(output: str) -> list[str]:
    """The names of the plugins `airflow plugins --output json` listed in `output`."""
    listing = next(line for line in output.splitlines() if line.startswith("[{"))
    return [plugin["name"] for plugin in json.loads(listing)]


def logged_problems(output: str) -> list[str]:
    """The lines of `output` Airflow logged at warning level or above."""
    return [line for line in output.splitlines() if PROBLEM.search(line)]
