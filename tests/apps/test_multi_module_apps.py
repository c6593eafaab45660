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
from ledger_engine.pipeline.inbox import write_event_files
from ledger_engine.pipeline.job import run_pipeline
from ledger_engine.store.database import open_store
from ledger_engine.store.state import snapshot_rows
from tests.support.user_apps import Layout, UserApp, user_app_events, write_user_app

LEDGER_COMMAND = Path(sys.executable).with_name("ledger")


def environment(app: UserApp, database_url: str, data_dir: Path) -> dict[str, str]:
    """What a user sets to run `app`: nothing that puts its folder on a Python path."""
    assert str(app.folder) not in os.environ.get("PYTHONPATH", "")
    return {
        "LEDGER_DATABASE_URL": database_url,
        "LEDGER_DATA_DIR": str(data_dir),
        "LEDGER_APP": app.spec,
        "LEDGER_FILES_PER_BATCH": "1",
        "LEDGER_SPARK_MASTER": "local[2]",
        "LEDGER_EXPECTATIONS": str(data_dir / "expectations"),
    }


def assert_committed_as_serially(settings: Settings, events) -> None:
    ledger = load_ledger(settings.app)
    expected = run_serial(ledger, events)
    assert {r.detail for r in expected.rejections} >= {"over the limit", "insufficient funds"}
    engine = open_store(settings)
    try:
        with engine.connect() as conn:
            for table in ledger.tables.values():
                assert dict(snapshot_rows(conn, table)) == expected.state[table.name], table.name
            applied = conn.exec_driver_sql("SELECT sum(applied) FROM ledger_batches").scalar()
    finally:
        engine.dispose()
    assert applied == expected.applied_count


def test_a_package_with_relative_imports_and_a_data_file_runs_through_the_ledger_command(
    make_database_url, tmp_path
):
    # The fee module is imported inside the transaction, at call time: the driver never
    # imports it before the executors need it.
    layout = Layout(
        packaged=True,
        relative=True,
        fee_import="call time",
        limit_from_data_file=True,
        odd_names=True,
    )
    app = write_user_app(tmp_path / "their code", layout)
    env = environment(app, make_database_url(migrated=False), tmp_path / "data")
    settings = Settings.from_env(env)
    events = user_app_events(600, accounts=30, seed=11)
    write_event_files(events, settings.inbox, events_per_file=200)

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
        packaged=False,
        relative=False,
        fee_import="computed name",
        limit_from_data_file=False,
        odd_names=True,
    )
    app = write_user_app(tmp_path / "their code", layout)
    settings = Settings.from_env(
        environment(app, make_database_url(migrated=False), tmp_path / "data")
    )
    events = user_app_events(500, accounts=25, seed=12)
    write_event_files(events, settings.inbox, events_per_file=250)

    report = run_pipeline(settings, spark=spark)

    assert report.total("ingested") == len(events)
    assert_committed_as_serially(settings, events)
