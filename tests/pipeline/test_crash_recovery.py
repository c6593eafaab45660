"""A pipeline that dies at any point and runs again ends exactly as one that never died.

Each case runs `ledger run` as a process of its own with `LEDGER_FAULT` set, so that it dies
abruptly (`os._exit`: no cleanup, no goodbye to PostgreSQL or Spark) at one named point of the
second of three micro-batches, or in the audits; then runs the pipeline again and compares
everything in PostgreSQL, row by row, with an uninterrupted run over the same files and with
the serial runner over those files.

The crashing processes are independent (a database and a data folder each) and mostly start a
Python and a Spark JVM, so they are started for the whole module, two at a time, while the
tests before them run again and compare in this process: each test waits for its own.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from ledger_engine.apps.bank.generator import generate_events
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.audit.rederivation.oracle import serial_differences
from ledger_engine.config import Settings
from ledger_engine.core.records import Event
from ledger_engine.faults import (
    AFTER_COMMIT,
    AFTER_READ,
    AFTER_STAGING,
    BEFORE_COMMIT,
    DURING_AUDITS,
    DURING_EXECUTION,
    FAULT_EXIT_CODE,
    FAULT_POINTS,
)
from ledger_engine.pipeline.checkpoint import stream_checkpoint
from ledger_engine.pipeline.event_inbox import write_event_files
from ledger_engine.pipeline.job import run_pipeline
from ledger_engine.store.database import connect
from ledger_engine.tasks.audit_runs import run_audits, snapshot_checks
from tests.support.database import rows
from tests.support.recorded_ledger import ledger_command, ledger_dump, pipeline_env

CRASHED_BATCH = 1  # of batches 0, 1, 2: one batch is committed before the crash, one after
# Crashing processes run at once: two use both cores (each is mostly a start-up), more only
# wait for them.
CONCURRENT_CRASHES = 2


def land_events(inbox: Path) -> None:
    """Three files, one micro-batch each, with faulty events, retries and a retry across
    batches (the first event again, at the end of the last file)."""
    events = generate_events(449, accounts=25, seed=23, bad_fraction=0.02, duplicate_fraction=0.03)
    first = events[0]
    events.append(Event(first.stream, first.request_id, first.payload))
    write_event_files(events, inbox, events_per_file=150)


@pytest.fixture(scope="module")
def uninterrupted(module_database_url: str, spark, tmp_path_factory) -> dict[str, list[tuple]]:
    """Everything an uninterrupted run stores for the same files."""
    data_dir = tmp_path_factory.mktemp("uninterrupted")
    settings = Settings.from_env(pipeline_env(data_dir, module_database_url))
    land_events(settings.inbox)
    engine = connect(module_database_url)
    try:
        report = run_pipeline(settings, spark=spark, engine=engine)
        assert [b.batch_id for b in report.batches] == [0, 1, 2]
        assert serial_differences(engine, build_ledger(), settings.inbox) == []
        return ledger_dump(engine)
    finally:
        engine.dispose()


@dataclass(frozen=True)
class Crash:
    """A `ledger run` that dies at one fault point: its ledger's settings and its process."""

    env: dict[str, str]
    database_url: str
    process: Future[subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def crashes(
    module_make_database_url: Callable[..., str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Crash]]:
    """For every fault point, a fresh database and data folder with the events landed, and
    `ledger run` started on them to die at that point (`CONCURRENT_CRASHES` at a time)."""
    pool = ThreadPoolExecutor(max_workers=CONCURRENT_CRASHES, thread_name_prefix="crash")
    try:
        crashes = {}
        for point in FAULT_POINTS:
            database_url = module_make_database_url()
            env = pipeline_env(tmp_path_factory.mktemp(point), database_url)
            land_events(Settings.from_env(env).inbox)
            where = point if point == DURING_AUDITS else f"{point}@{CRASHED_BATCH}"
            args = ["run", "--audit"] if point == DURING_AUDITS else ["run"]
            process = pool.submit(ledger_command, args, {**env, "LEDGER_FAULT": where})
            crashes[point] = Crash(env, database_url, process)
        yield crashes
    finally:
        # Every process has ended before the module's databases are dropped.
        pool.shutdown(wait=True, cancel_futures=True)


def crashed_batch_events(engine: Engine) -> int:
    with engine.connect() as conn:
        return conn.execute(
            text("SELECT count(*) FROM ledger_events WHERE batch_id = :b"),
            {"b": CRASHED_BATCH},
        ).scalar_one()


def assert_left_behind(point: str, engine: Engine, settings: Settings) -> None:
    """What the system of record holds right after the crash at `point`."""
    committed = rows(engine, "SELECT count(*) FROM ledger_batches")[0][0]
    if point == DURING_AUDITS:
        assert committed == 3
        # The audit died before its verdict: no mark.
        assert rows(engine, "SELECT count(*) FROM ledger_audit_marks") == [(0,)]
    elif point == AFTER_COMMIT:  # committed, but the streaming checkpoint never heard of it
        assert committed == 2
        stream = stream_checkpoint(settings.checkpoint, engine)
        assert not (stream / "commits" / str(CRASHED_BATCH)).exists()
        assert crashed_batch_events(engine) == 150
    else:
        # Before the commit the batch's journal is in the driver's memory only (BEFORE_COMMIT:
        # written by the commit's transaction, which the server rolled back).
        assert point in (AFTER_READ, DURING_EXECUTION, AFTER_STAGING, BEFORE_COMMIT)
        assert committed == 1
        assert crashed_batch_events(engine) == 0


@pytest.mark.parametrize("point", FAULT_POINTS)
def test_a_run_killed_at_a_fault_point_then_run_again_stores_exactly_one_clean_run(
    point: str, crashes: dict[str, Crash], spark, uninterrupted
) -> None:
    crash = crashes[point]
    database_url, settings = crash.database_url, Settings.from_env(crash.env)

    crashed = crash.process.result()

    assert crashed.returncode == FAULT_EXIT_CODE, crashed.stdout + crashed.stderr
    assert f"LEDGER_FAULT: dying at {point}" in crashed.stderr
    engine = connect(database_url)
    try:
        assert_left_behind(point, engine, settings)

        rerun = run_pipeline(settings, spark=spark, engine=engine)
        if point == DURING_AUDITS:  # the audits run again, whole, and pass
            audits, _ = run_audits(settings, engine=engine)
            assert [c.name for c in audits.checks if not c.passed] == []

        replayed = [b.batch_id for b in rerun.batches if not b.committed]
        assert replayed == ([CRASHED_BATCH] if point == AFTER_COMMIT else [])
        assert ledger_dump(engine) == uninterrupted
        assert serial_differences(engine, build_ledger(), settings.inbox) == []
        assert all(check.passed for check in snapshot_checks(settings, engine))
        # Died holding the lease, except in the audits, which run after the lease is let go.
        died_as = "finished" if point == DURING_AUDITS else "abandoned"
        assert rows(engine, "SELECT outcome FROM ledger_runs ORDER BY epoch") == [
            (died_as,),
            ("finished",),
        ]
        assert rows(engine, "SELECT count(*) FROM ledger_stage_rows") == [(0,)]
    finally:
        engine.dispose()
        shutil.rmtree(settings.reports, ignore_errors=True)
