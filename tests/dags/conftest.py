"""Fixtures for the DAG tests: an isolated Airflow home, a fresh ledger database, and a way to
run `tests/dags/dag_runner.py` in a subprocess with exactly the environment a test chose (how
it runs, and every other helper for running DAGs in subprocesses, is in
tests/support/airflow_dags.py).

Airflow reads its configuration (AIRFLOW_HOME, the metadata database, the DAGs folder) when it
is first imported, so every Airflow call happens in a subprocess: nothing Airflow configures
(logging, settings) leaks into the pytest process or into other tests.

PostgreSQL comes from `pg_server_url` (tests/conftest.py): the server at LEDGER_DATABASE_URL
when that is set, otherwise an embedded pgserver started for the session and stopped after it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page

from tests.support.airflow_dags import (
    DAGS_FOLDER,
    DagRunServer,
    Runner,
    Sequence,
    run_dag_runner,
    run_logged,
)
from tests.support.airflow_stack import chromium_page, inherited_environment


@pytest.fixture(scope="session")
def dag_sequence(
    airflow_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Sequence]:
    """`sequence(runs, env, workdir, name)`: whole DAG runs, one after the other, in the
    session's one DAG-running process (`DagRunServer`); what each run gave, in order. Each
    run's log is `<its name>.log` in `workdir`, the sequence's `<name>.log`."""
    server = DagRunServer(airflow_env, tmp_path_factory.mktemp("dag_runs"))
    try:
        yield server.sequence
    finally:
        server.close()


@pytest.fixture(scope="session")
def dag_runner() -> Runner:
    """`run_dag_runner`, for tests: `dag_runner(mode, env, workdir, name) -> result`."""
    return run_dag_runner


@pytest.fixture(scope="session")
def airflow_base_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment of an Airflow installation of its own: a temporary AIRFLOW_HOME, a SQLite
    metadata database in it, this repository's dags/ and no example DAGs."""
    home = tmp_path_factory.mktemp("airflow_home")
    return inherited_environment() | {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS_FOLDER),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "SPARK_LOCAL_IP": "127.0.0.1",
        # Spark's Python workers run PYSPARK_PYTHON, else whatever `python3` is on PATH; the
        # `spark.pyspark.python` that ledger_engine.runtime.spark.session sets does not reach them.
        # Without this they import `ledger_engine` only when started from the repository root.
        "PYSPARK_PYTHON": sys.executable,
    }


@pytest.fixture(scope="session")
def parsed(
    dag_runner: Runner,
    airflow_base_env: dict[str, str],
    tmp_path_factory: pytest.TempPathFactory,
) -> dict:
    """What `DagBag` makes of the dags/ folder with no `LEDGER_*` schedule set, parsed once
    for every DAG's tests."""
    return dag_runner("parse", airflow_base_env, tmp_path_factory.mktemp("parse"), "parse")


@pytest.fixture(scope="session")
def airflow_env(airflow_base_env: dict[str, str]) -> dict[str, str]:
    """`airflow_base_env` with its metadata database migrated (`dag.test()` needs it)."""
    home = Path(airflow_base_env["AIRFLOW_HOME"])
    run_logged(
        [sys.executable, "-m", "airflow", "db", "migrate"],
        airflow_base_env,
        home / "db-migrate.log",
        cwd=home,
    )
    return airflow_base_env


@pytest.fixture(scope="module")
def ledger_database_url(module_empty_database_url: str) -> str:
    """URL of a new, empty database for one test module's ledgers (tests/conftest.py), dropped
    afterwards. The pipeline applies each ledger's schema itself."""
    return module_empty_database_url


@pytest.fixture
def page() -> Iterator[Page]:
    """A page of headless Chromium (Debian's; Playwright drives it, downloads nothing), for
    the tests of Airflow's UI and the ledger's pages in it."""
    with chromium_page() as opened:
        yield opened
