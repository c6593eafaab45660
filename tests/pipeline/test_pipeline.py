"""Event files in, committed and audited in PostgreSQL, identical to the serial runner."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger_engine.apps.bank.generator import generate_events
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.config import Settings
from ledger_engine.core.ingest import ingest_files
from ledger_engine.pipeline.checkpoint import stream_checkpoint
from ledger_engine.pipeline.event_inbox import write_event_files
from ledger_engine.pipeline.job import run_pipeline
from ledger_engine.runtime.serial import run_serial
from ledger_engine.store.database import connect, open_store
from ledger_engine.store.embedded import stop_embedded
from ledger_engine.tasks.audit_runs import snapshot_checks
from tests.support.database import rows

EVENTS = 3_000
ACCOUNTS = 150


def inbox_events(inbox: Path):
    """The events of every landed file, in the pipeline's batch order (file, then line)."""
    files = [(p.name, p.read_bytes()) for p in sorted(inbox.glob("*.jsonl"))]
    return [line.event for line in ingest_files(files) if line.event is not None], sum(
        1 for _, content in files for raw in content.split(b"\n") if raw.strip()
    )


@pytest.fixture(params=["embedded", "database_url"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Settings]:
    """Settings for a fresh pipeline, on the embedded server or on `LEDGER_DATABASE_URL`."""
    env = {"LEDGER_DATA_DIR": str(tmp_path), "LEDGER_FILES_PER_BATCH": "2"}
    if request.param == "database_url":
        env["LEDGER_DATABASE_URL"] = request.getfixturevalue("empty_database_url")
        yield Settings.from_env(env)
        return
    # The embedded server's data lives outside pytest's base folder, which a pytest session
    # starting meanwhile resets to mode 0700 (see `pg_server_url` in tests/conftest.py).
    data_dir = Path(tempfile.mkdtemp(prefix="ledger-test-data-"))
    settings = Settings.from_env({**env, "LEDGER_DATA_DIR": str(data_dir)})
    assert settings.database_url is None, "the embedded server is the default"
    try:
        yield settings
    finally:
        stop_embedded(settings.pgdata)
        shutil.rmtree(data_dir, ignore_errors=True)


def test_pipeline_commits_exactly_what_the_serial_runner_computes(settings, spark) -> None:
    write_event_files(
        generate_events(EVENTS, accounts=ACCOUNTS, seed=11), settings.inbox, events_per_file=500
    )
    report = run_pipeline(settings, spark=spark)

    assert [b.batch_id for b in report.batches] == [0, 1, 2]
    assert all(b.committed for b in report.batches)
    events, lines = inbox_events(settings.inbox)
    assert report.total("ingested") == lines == EVENTS
    expected = run_serial(build_ledger(), events)
    assert report.total("applied") == expected.applied_count
    assert report.total("rejected") == len(expected.rejections)
    assert report.total("duplicates") == len(expected.duplicates)

    engine = open_store(settings)
    assert dict(rows(engine, "SELECT key, value FROM accounts")) == expected.state["accounts"]
    assert (
        dict(rows(engine, "SELECT key, value FROM asset_ledger"))
        == (expected.state["asset_ledger"])
    )
    stored_results = rows(
        engine,
        "SELECT stream, request_id, payload FROM ledger_results ORDER BY batch_id, position, seq",
    )
    assert stored_results == [(r.stream, r.request_id, r.payload) for r in expected.results]
    stored_reasons = rows(
        engine,
        "SELECT request_id, reason FROM ledger_rejections ORDER BY batch_id, position",
    )
    assert stored_reasons == [(r.request_id, r.reason) for r in expected.rejections]
    assert rows(engine, "SELECT count(*) FROM ledger_change_log") == [(len(expected.changes),)]
    assert all(check.passed for check in snapshot_checks(settings, engine))
    engine.dispose()


def test_a_second_run_only_processes_newly_landed_files(settings, spark) -> None:
    events = generate_events(1_000, accounts=50, seed=3)
    write_event_files(events[:600], settings.inbox, events_per_file=300, prefix="early")
    first = run_pipeline(settings, spark=spark)
    # Nothing new: no batch, and no Spark session started for it (none is given here).
    idle = run_pipeline(settings)
    assert (idle.batches, idle.pending_files, idle.session_seconds) == ([], 0, 0.0)

    write_event_files(events[600:], settings.inbox, events_per_file=400, prefix="late")
    second = run_pipeline(settings, spark=spark)
    assert second.pending_files == 1
    assert [b.batch_id for b in second.batches] == [first.batches[-1].batch_id + 1]

    engine = open_store(settings)
    expected = run_serial(build_ledger(), events)
    assert dict(rows(engine, "SELECT key, value FROM accounts")) == expected.state["accounts"]
    engine.dispose()


def test_a_batch_replayed_after_its_commit_is_a_no_op(settings, spark) -> None:
    """A crash after the commit but before the checkpoint advanced makes Spark run the batch
    again; the batch-id guard turns the replay into a no-op."""
    write_event_files(
        generate_events(800, accounts=40, seed=5), settings.inbox, events_per_file=400
    )
    first = run_pipeline(settings, spark=spark)
    last = first.batches[-1].batch_id
    engine = open_store(settings)
    log_before = rows(engine, "SELECT * FROM ledger_change_log ORDER BY batch_id, position, seq")
    state_before = rows(engine, "SELECT key, value FROM accounts ORDER BY key")

    # As if the process died between the commit and the checkpoint's commit-log entry.
    stream = stream_checkpoint(settings.checkpoint, engine)
    os.remove(stream / "commits" / str(last))
    os.remove(stream / "commits" / f".{last}.crc")
    replay = run_pipeline(settings, spark=spark)

    # Every file was taken, yet the run ran the batch the checkpoint left unfinished.
    assert replay.pending_files == 0
    assert [(b.batch_id, b.committed) for b in replay.batches] == [(last, False)]
    assert rows(engine, "SELECT * FROM ledger_change_log ORDER BY batch_id, position, seq") == (
        log_before
    )
    assert rows(engine, "SELECT key, value FROM accounts ORDER BY key") == state_before
    assert rows(engine, "SELECT count(*) FROM ledger_batches") == [(len(first.batches),)]
    engine.dispose()


def test_the_database_url_setting_selects_the_server(empty_database_url: str, tmp_path) -> None:
    settings = Settings.from_env(
        {"LEDGER_DATA_DIR": str(tmp_path), "LEDGER_DATABASE_URL": empty_database_url}
    )
    engine = open_store(settings)
    assert engine.url.database == connect(empty_database_url).url.database
    assert not settings.pgdata.exists(), "no embedded server is started when a URL is given"
    engine.dispose()
