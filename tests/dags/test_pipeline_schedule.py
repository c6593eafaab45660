"""When `ledger_pipeline` runs: when event files land by default (its schedule is the event
inbox's asset, whose watcher the triggerer runs), on a cron only when the settings say so; and
what it publishes: the asset `ledger_batches`, updated by the task that commits the batches.

The watcher's trigger, run as the triggerer runs it against an event inbox, fires once for a
file landed whole, not for one still landing under its hidden name, not for a file a
committed batch took, not for a file that is not an event file; on a ledger no run has ever
committed it fires for what lies there.

Each Airflow call runs in a subprocess with an isolated AIRFLOW_HOME and the `LEDGER_*`
settings of the test: see conftest.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from tests.support.airflow_dags import TRIGGER_WATCH, python_json, schedule_of
from tests.support.bank import deposit
from tests.support.events import event_file

DAG_ID = "ledger_pipeline"
FIRST = event_file([deposit("d1", "alice", 10_000)])
LATER = event_file([deposit("d2", "alice", 5_000)])


def test_it_runs_when_event_files_land_and_publishes_the_committed_batches(
    airflow_base_env: dict[str, str],
) -> None:
    inbox = Path("/srv/ledger/inbox")
    schedule = schedule_of(DAG_ID, airflow_base_env | {"LEDGER_INBOX": str(inbox)})

    assert schedule["timetable"] == "AssetTriggeredTimetable", "no clock: files, or by hand"
    assert schedule["asset"] == {"name": "ledger_events", "uri": inbox.as_uri()}
    assert schedule["watchers"] == [
        {
            "name": "events_landed",
            "classpath": "ledger_engine.pipeline.trigger.EventsLanded",
            "kwargs": {"poll_seconds": 30.0},
            "rebuilt": True,
        }
    ]
    assert schedule["outlets"] == {"run_micro_batches": ["ledger_batches"]}


def test_a_cron_setting_runs_it_on_the_clock_only(airflow_base_env: dict[str, str]) -> None:
    schedule = schedule_of(DAG_ID, airflow_base_env | {"LEDGER_DAG_SCHEDULE": "*/15 * * * *"})

    assert schedule["timetable"] == "CronTriggerTimetable"
    assert schedule["cron"] == "*/15 * * * *"
    assert (schedule["asset"], schedule["watchers"]) == (None, []), "nothing watched"
    assert schedule["outlets"] == {"run_micro_batches": ["ledger_batches"]}


# --- The watcher's trigger, as the triggerer runs it ----------------------------------------


def watch(env: dict[str, str], inbox: Path, workdir: Path) -> dict[str, Any]:
    """What the trigger yielded with `inbox` as it is, while `later.jsonl` landed, and after
    (`trigger_watch.py`)."""
    later = workdir / "later.jsonl"
    later.write_bytes(LATER)
    return python_json(
        "-m",
        TRIGGER_WATCH,
        "ledger_engine.pipeline.trigger.EventsLanded",
        str(inbox),
        "later.jsonl",
        str(later),
        env=env | {"LEDGER_INBOX": str(inbox), "LEDGER_DATA_DIR": str(workdir)},
    )


def test_the_watcher_fires_once_for_an_event_file_landed_whole_and_none_committed(
    airflow_base_env: dict[str, str],
    database_url: str,
    engine: Engine,
    commit_files,
    tmp_path: Path,
) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "committed.jsonl").write_bytes(FIRST)
    commit_files(engine, 0, [("committed.jsonl", FIRST)])
    (inbox / "notes.txt").write_text("not an event file", encoding="utf-8")
    (inbox / "_spark_metadata").mkdir()

    seen = watch(airflow_base_env | {"LEDGER_DATABASE_URL": database_url}, inbox, tmp_path)

    assert seen == {
        "before": None,
        "while_landing": False,
        "fired": {"events": ["later.jsonl"]},
        "fired_again": False,
    }


def test_on_a_ledger_never_run_the_watcher_fires_for_what_has_landed(
    airflow_base_env: dict[str, str], empty_database_url: str, tmp_path: Path
) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "first.jsonl").write_bytes(FIRST)

    seen = watch(airflow_base_env | {"LEDGER_DATABASE_URL": empty_database_url}, inbox, tmp_path)

    assert seen == {
        "before": {"events": ["first.jsonl"]},
        "while_landing": False,
        "fired": {"events": ["later.jsonl"]},
        "fired_again": False,
    }
