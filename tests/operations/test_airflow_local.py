"""How `ledger airflow` sets Airflow up (its settings, the components' environment) and when it
calls the stack ready. The stack itself, started and stopped for real, is
tests/dags/test_airflow_command.py's."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ledger_engine.config import PROJECT_ROOT, Settings
from ledger_engine.operations.airflow_local import StackPorts, airflow_environment, is_ready
from tests.support.airflow_stack import inherited_environment
from tests.support.plugin_registration import (
    LISTING,
    listed_plugins,
    logged_problems,
    metadata_copy,
)

# `airflow plugins` started as the stack starts each component, in a child Python (the stack's
# process group makes its process a child subreaper, which the pytest process must not become).
START_AS_A_COMPONENT = """
import os, sys
from ledger_engine.config import Settings
from ledger_engine.operations.airflow_local import AirflowStack, StackPorts, airflow_environment
settings = Settings.from_env({"LEDGER_DATA_DIR": sys.argv[1]})
env = airflow_environment(settings, StackPorts(1, 2, 3), "postgresql://unused", os.environ)
stack = AirflowStack(settings, print)
sys.exit(stack.start_airflow(" ".join(sys.argv[2:]), env).wait())
"""


def test_its_settings_default_to_a_home_in_the_data_folder_port_8080_and_two_tasks(
    tmp_path: Path,
) -> None:
    settings = Settings.from_env({"LEDGER_DATA_DIR": str(tmp_path)})
    assert settings.airflow_home == tmp_path / "airflow"
    assert (settings.airflow_port, settings.airflow_parallelism) == (8080, 2)
    chosen = Settings.from_env(
        {
            "LEDGER_AIRFLOW_HOME": str(tmp_path / "elsewhere"),
            "LEDGER_AIRFLOW_PORT": "0",
            "LEDGER_AIRFLOW_PARALLELISM": "4",
        }
    )
    assert chosen.airflow_home == tmp_path / "elsewhere"
    assert (chosen.airflow_port, chosen.airflow_parallelism) == (0, 4)


@pytest.mark.parametrize(
    "variable, value",
    [
        ("LEDGER_AIRFLOW_PORT", "65536"),
        ("LEDGER_AIRFLOW_PORT", "-1"),
        ("LEDGER_AIRFLOW_PARALLELISM", "0"),
    ],
)
def test_a_setting_out_of_range_is_refused(variable: str, value: str) -> None:
    with pytest.raises(ValueError, match=variable):
        Settings.from_env({variable: value})


def test_the_components_environment(tmp_path: Path) -> None:
    settings = Settings.from_env({"LEDGER_DATA_DIR": str(tmp_path / "data")})
    caller = {
        "PATH": "/usr/bin",
        "AIRFLOW_CONFIG": "/somewhere/else.cfg",  # would move Airflow's config out of its home
        "AIRFLOW__CORE__DEFAULT_TIMEZONE": "Europe/Paris",  # another setting: it stays
        "AIRFLOW__CORE__PARALLELISM": "32",  # the command's setting wins
    }
    env = airflow_environment(settings, StackPorts(8123, 9001, 9002), "postgresql://db", caller)

    assert "AIRFLOW_CONFIG" not in env
    assert env["AIRFLOW__CORE__DEFAULT_TIMEZONE"] == "Europe/Paris"
    assert env["AIRFLOW_HOME"] == str(tmp_path / "data" / "airflow")
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("sqlite:///" + env["AIRFLOW_HOME"])
    assert env["AIRFLOW__CORE__DAGS_FOLDER"] == str(PROJECT_ROOT / "dags")
    assert env["AIRFLOW__CORE__LOAD_EXAMPLES"] == "False"
    assert env["AIRFLOW__CORE__PARALLELISM"] == "2"
    assert (env["AIRFLOW__API__HOST"], env["AIRFLOW__API__PORT"]) == ("127.0.0.1", "8123")
    # The task workers reach the API server where it is, not at Airflow's default :8080.
    assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == "http://127.0.0.1:8123/execution/"
    assert env["AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT"] == "9001"
    assert env["AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT"] == "9002"
    # The tasks reach the ledger this command resolved.
    assert env["LEDGER_DATABASE_URL"] == "postgresql://db"
    assert env["LEDGER_INBOX"] == str(tmp_path / "data" / "inbox")
    assert env["LEDGER_REPORTS"] == str(tmp_path / "data" / "reports")
    assert Path(env["LEDGER_EXPECTATIONS"]).is_absolute()
    assert env["PATH"].split(":")[0] == str(Path(sys.executable).parent)


def test_the_components_find_the_files_named_from_where_the_command_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The components run from Airflow's home: a file named relative to here is named whole.
    monkeypatch.chdir(tmp_path)
    settings = Settings.from_env(
        {
            "LEDGER_DATA_DIR": str(tmp_path / "data"),
            "LEDGER_APP": "apps/mine.py:build",
            "LEDGER_RECONCILIATION": "sources.toml",
        }
    )
    env = airflow_environment(settings, StackPorts(8123, 9001, 9002), "postgresql://db", {})

    assert env["LEDGER_APP"] == f"{tmp_path / 'apps' / 'mine.py'}:build"
    assert env["LEDGER_RECONCILIATION"] == str(tmp_path / "sources.toml")
    modules = Settings.from_env({"LEDGER_APP": "my_ledgers.bank:build"})
    assert airflow_environment(modules, StackPorts(1, 2, 3), "", {})["LEDGER_APP"] == (
        "my_ledgers.bank:build"
    )


def health(**beats: datetime | None) -> dict:
    """A health report as Airflow's `/api/v2/monitor/health` gives it."""
    report: dict = {"metadatabase": {"status": "healthy"}}
    for component in ("scheduler", "triggerer", "dag_processor"):
        beat = beats.get(component)
        report[component] = {
            "status": "healthy" if beat else "unhealthy",
            f"latest_{component}_heartbeat": beat.isoformat() if beat else None,
        }
    return report


def test_ready_once_every_component_beats_since_the_stack_started() -> None:
    since = datetime.now(UTC)
    later, earlier = since + timedelta(seconds=2), since - timedelta(seconds=2)
    every = {"scheduler": later, "triggerer": later, "dag_processor": later}
    assert is_ready(health(**every), since)
    assert not is_ready(None, since), "no answer yet"
    assert not is_ready(health(**every | {"triggerer": None}), since)
    # A scheduler of a stack killed moments ago still looks alive: not this stack's.
    assert not is_ready(health(**every | {"scheduler": earlier}), since)
    database_down = health(**every) | {"metadatabase": {"status": "unhealthy"}}
    assert not is_ready(database_down, since)


def test_its_components_load_the_ledgers_plugin_once_wherever_it_is_run_from(
    tmp_path: Path,
) -> None:
    # Run from the project's root, say, where an editable install leaves a copy of the
    # ledger's metadata: a component that saw it would load the plugin twice.
    here = tmp_path / "checkout"
    metadata_copy(here)
    data_dir = tmp_path / "data"
    done = subprocess.run(
        [sys.executable, "-c", START_AS_A_COMPONENT, str(data_dir), *LISTING],
        cwd=here,
        env=inherited_environment(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (log,) = (data_dir / "airflow" / "logs" / "stack").glob("plugins*.log")
    output = log.read_text()

    assert listed_plugins(output) == ["ledger"]
    assert logged_problems(output) == []
