"""A user's application in several modules runs through the pipeline as it runs serially:
landed as files, run on Spark (the executors import only what the platform sends them: the
application's folder is on no `PYTHONPATH`) and committed to PostgreSQL, equal to `run_serial`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ledger_engine import run_serial
from ledger_engine.apps import load_ledger
from ledger_engine.config import Settings
from ledger_engine.pipeline.event_inbox import write_event_files
from ledger_engine.pipeline.job import run_pipeline
from ledger_engine.store.database import open_store
from tests.support.database import committed_state, rows
from tests.support.user_apps import Layout, user_app_events, write_user_app

LEDGER_COMMAND = Path(sys.executable).with_name("ledger")


def landed(layout: Layout, database_url: str, folder: Path, *, events: int, seed: int):
    """A user's application of `layout` written under `folder` with its events landed (three
    files): the environment a user sets to run it, which puts its folder on no Python path,
    the settings it makes, and the events."""
    app = write_user_app(folder / "their code", layout)
    assert str(app.folder) not in os.environ.get("PYTHONPATH", "")
    env = {
        "LEDGER_DATABASE_URL": database_url,
        "LEDGER_DATA_DIR": str(folder / "data"),
        "LEDGER_APP": app.spec,
        "LEDGER_FILES_PER_BATCH": "1",
        "LEDGER_SPARK_MASTER": "local[2]",
        "LEDGER_EXPECTATIONS": str(folder / "data" / "expectations"),
    }
    settings = Settings.from_env(env)
    landed_events = user_app_events(events, accounts=events // 20, seed=seed)
    write_event_files(landed_events, settings.inbox, events_per_file=events // 3 + 1)
    return env, settings, landed_events


def assert_committed_as_serially(settings: Settings, events) -> None:
    ledger = load_ledger(settings.app)
    expected = run_serial(ledger, events)
    assert {r.detail for r in expected.rejections} >= {"over the limit", "insufficient funds"}
    assert committed_state(settings, ledger) == expected.state
    engine = open_store(settings)
    try:
        applied = rows(engine, "SELECT sum(applied) FROM ledger_batches")
    finally:
        engine.dispose()
    assert applied == [(expected.applied_count,)]


def test_a_package_with_relative_imports_and_a_data_file_runs_through_the_ledger_command(
    make_database_url, tmp_path
):
    # The fee module is imported inside the transaction, at call time: the driver never
    # imports it before the executors need it.
    layout = Layout(
        True, relative=True, fee_import="call time", limit_from_data_file=True, odd_names=True
    )
    env, settings, events = landed(
        layout, make_database_url(migrated=False), tmp_path, events=600, seed=11
    )

    run = subprocess.run(
        [str(LEDGER_COMMAND), "run"],
        env={**os.environ, **env},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )

    assert run.returncode == 0, run.stdout + run.stderr
    assert_committed_as_serially(settings, events)


def test_modules_side_by_side_one_imported_by_a_computed_name_run_through_the_pipeline(
    make_database_url, spark, tmp_path
):
    layout = Layout(
        False,
        relative=False,
        fee_import="computed name",
        limit_from_data_file=False,
        odd_names=True,
    )
    _, settings, events = landed(
        layout, make_database_url(migrated=False), tmp_path, events=500, seed=12
    )

    report = run_pipeline(settings, spark=spark)

    assert report.total("ingested") == len(events)
    assert_committed_as_serially(settings, events)
