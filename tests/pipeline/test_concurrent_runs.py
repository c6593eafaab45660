"""Two pipeline runs on one system of record: one proceeds, the other waits or exits saying
why, and nothing is doubled, even when the first holder is killed mid-batch."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import psycopg2
import pytest
from sqlalchemy import Engine, text

from ledger_engine.apps.bank.generator import generate_events
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.audit.rederivation.oracle import serial_differences
from ledger_engine.cli import EXIT_BUSY
from ledger_engine.config import PROJECT_ROOT, Settings
from ledger_engine.errors import Fenced, LeaseLost, LedgerBusy
from ledger_engine.pipeline.event_inbox import write_event_files
from ledger_engine.pipeline.job import PipelineReport, run_pipeline
from ledger_engine.store.commit import StagedBatch, commit_staged
from ledger_engine.store.database import libpq_url
from ledger_engine.store.lease import LEDGER_KEY, run_lease
from ledger_engine.store.locks import RUN_LOCK
from ledger_engine.store.sql_files import statement
from ledger_engine.store.staging import Stager
from tests.support.database import rows
from tests.support.recorded_ledger import ledger_command, pipeline_env

LEDGER = build_ledger()


def land(inbox: Path, count: int = 160, per_file: int = 80) -> None:
    """Two files: two micro-batches."""
    write_event_files(generate_events(count, accounts=20, seed=31), inbox, events_per_file=per_file)


def kill_lease_connection(engine: Engine) -> None:
    """Cut off the session that holds the run lease, as a network partition or a server-side
    timeout would, while its owner goes on."""
    with engine.begin() as conn:
        killed = conn.execute(
            text(
                "SELECT pg_terminate_backend(l.pid) FROM pg_locks l"
                " JOIN pg_database d ON d.oid = l.database"
                " WHERE l.locktype = 'advisory' AND d.datname = current_database()"
                " AND l.granted"
            )
        ).all()
    assert killed == [(True,)], "exactly one session held the lease"


def test_a_run_started_while_another_holds_the_ledger_exits_naming_the_holder(
    database_url: str, engine: Engine, tmp_path: Path
) -> None:
    env = pipeline_env(tmp_path, database_url)
    land(Settings.from_env(env).inbox)
    with run_lease(engine, "the nightly backfill"):
        second = ledger_command(["run", "--wait", "1"], env)
    assert second.returncode == EXIT_BUSY, second.stdout + second.stderr
    assert "the ledger is busy" in second.stdout
    assert "the nightly backfill" in second.stdout
    assert rows(engine, "SELECT count(*) FROM ledger_batches") == [(0,)]
    assert rows(engine, "SELECT holder, outcome FROM ledger_runs") == [
        ("the nightly backfill", "finished")
    ]


def test_a_run_that_may_wait_starts_once_the_holder_lets_go(
    database_url: str, engine: Engine, spark, tmp_path: Path
) -> None:
    settings = Settings.from_env(pipeline_env(tmp_path, database_url)).with_overrides(
        run_wait_seconds=120
    )
    land(settings.inbox)
    waits: list[float] = []
    held, waited = threading.Event(), threading.Event()

    def hold_until_the_second_run_waits() -> None:
        with run_lease(engine, "a short first run"):
            held.set()
            # The barrier: the lease is let go only once the second run found it taken.
            assert waited.wait(120), "the second run never waited for the lease"

    def on_wait(_: object, seconds: float) -> None:
        waits.append(seconds)
        waited.set()

    first = threading.Thread(target=hold_until_the_second_run_waits)
    first.start()
    assert held.wait(30), "the first run never took the lease"
    report = run_pipeline(settings, spark=spark, engine=engine, on_wait=on_wait)
    first.join()

    assert waits, "the second run waited"
    assert [b.batch_id for b in report.batches] == [0, 1]
    assert serial_differences(engine, LEDGER, settings.inbox) == []


def waiting_for_the_lease(engine: Engine) -> int:
    """How many sessions of this database are waiting for the run lease: a waiting run asks
    who holds it after each failed try (`lease/current_holder.sql`), which no holder asks."""
    [(waiting,)] = rows(
        engine,
        "SELECT count(*) FROM pg_stat_activity"
        " WHERE datname = current_database() AND pid <> pg_backend_pid() AND query = :asked",
        asked=statement("lease/current_holder"),
    )
    return waiting


def test_two_runs_started_at_once_commit_every_batch_exactly_once(
    database_url: str, engine: Engine, spark, tmp_path: Path
) -> None:
    """A manual `ledger run` and another run (here, in this process) let go at once: a gate
    holds the lease until both are waiting for it, then they race for it."""
    env = {**pipeline_env(tmp_path, database_url), "LEDGER_RUN_WAIT_SECONDS": "600"}
    settings = Settings.from_env(env)
    land(settings.inbox)
    outcome: dict[str, object] = {}

    def run_here() -> None:
        outcome["here"] = run_pipeline(settings, spark=spark, engine=engine)

    with run_lease(engine, "the gate"):
        manual = subprocess.Popen(
            [sys.executable, "-m", "ledger_engine.cli", "run"],
            env={**os.environ, **env},
            cwd=PROJECT_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        here_thread = threading.Thread(target=run_here)
        here_thread.start()
        deadline = time.monotonic() + 300
        while waiting_for_the_lease(engine) < 2:  # the barrier: both runs wait
            assert manual.poll() is None, manual.communicate()[0]
            assert time.monotonic() < deadline, "the two runs never both waited for the lease"
            time.sleep(0.2)
    try:
        here_thread.join(600)
        assert not here_thread.is_alive(), "the run here never ended"
        here = outcome["here"]
        assert isinstance(here, PipelineReport), outcome
    finally:
        output = manual.communicate(timeout=600)[0]

    assert manual.returncode == 0, output
    committed_here = [b.batch_id for b in here.batches if b.committed]
    assert committed_here in ([], [0, 1]), "one run committed every batch, the other none"
    assert rows(engine, "SELECT count(*) FROM ledger_batches") == [(2,)]
    assert rows(engine, "SELECT holder, outcome FROM ledger_runs ORDER BY epoch")[0] == (
        "the gate",
        "finished",
    )
    assert [o for (o,) in rows(engine, "SELECT outcome FROM ledger_runs ORDER BY epoch")] == [
        "finished"
    ] * 3
    assert serial_differences(engine, LEDGER, settings.inbox) == []


def test_a_killed_holder_frees_the_ledger_for_the_next_run(
    database_url: str, engine: Engine, spark, tmp_path: Path
) -> None:
    env = pipeline_env(tmp_path, database_url)
    settings = Settings.from_env(env)
    land(settings.inbox)
    stderr = tmp_path / "first.stderr"
    with stderr.open("w") as sink:
        first = subprocess.Popen(
            [sys.executable, "-m", "ledger_engine.cli", "run"],
            env={**os.environ, **env, "LEDGER_FAULT": "after_staging@1:pause"},
            cwd=PROJECT_ROOT,
            stdout=subprocess.DEVNULL,
            stderr=sink,
        )
    try:
        deadline = time.monotonic() + 300
        while "LEDGER_FAULT: paused" not in stderr.read_text():
            assert first.poll() is None, stderr.read_text()
            assert time.monotonic() < deadline, "the first run never reached its pause"
            time.sleep(0.5)
        with pytest.raises(LedgerBusy, match="ledger run, pid"):
            impatient = settings.with_overrides(run_wait_seconds=1)
            run_pipeline(impatient, spark=spark, engine=engine)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(60)

    report = run_pipeline(settings.with_overrides(run_wait_seconds=60), spark=spark, engine=engine)

    assert [b.batch_id for b in report.batches] == [1]
    assert rows(engine, "SELECT outcome FROM ledger_runs ORDER BY epoch") == [
        ("abandoned",),
        ("finished",),
    ]
    assert serial_differences(engine, LEDGER, settings.inbox) == []


def test_a_run_that_lost_its_lease_can_neither_stage_nor_commit(
    database_url: str, engine: Engine
) -> None:
    dsn = libpq_url(database_url)
    with run_lease(engine, "cut off") as stale:
        kill_lease_connection(engine)
        with pytest.raises(LeaseLost, match="was lost"):
            stale.confirm()
        with run_lease(engine, "next") as current:
            assert current.epoch == stale.epoch + 1
            with pytest.raises(Fenced, match=f"epoch {stale.epoch}"):
                Stager(dsn, 0, "round0:0", stale.epoch)
            staged = StagedBatch(0, LEDGER.name, (), "f" * 64, 0, (), {}, 0.0, stale.epoch)
            with pytest.raises(Fenced):
                commit_staged(engine, LEDGER, staged)
            Stager(dsn, 0, "round0:0", current.epoch).commit()
            fresh = replace(staged, fence_epoch=current.epoch)
            assert commit_staged(engine, LEDGER, fresh).committed
    assert rows(engine, "SELECT holder, outcome FROM ledger_runs ORDER BY epoch") == [
        ("cut off", "abandoned"),
        ("next", "finished"),
    ]


def test_a_write_in_flight_holds_back_the_next_lease_until_it_ends(
    database_url: str, engine: Engine
) -> None:
    """The fence's share lock: a stale task mid-transaction finishes (its rows are then
    discarded by the next run's first step) before the next run takes its epoch."""
    with run_lease(engine, "first") as first:
        stager = Stager(libpq_url(database_url), 0, "round0:0", first.epoch)
        kill_lease_connection(engine)
        taken: list[int] = []
        second = threading.Thread(
            target=lambda: taken.extend(_take_lease_epoch(engine)), daemon=True
        )
        second.start()
        second.join(2)
        assert second.is_alive() and taken == [], "the next run waits for the write in flight"
        stager.commit()
        second.join(30)
        assert taken == [first.epoch + 1]


def _take_lease_epoch(engine: Engine) -> list[int]:
    with run_lease(engine, "second", wait_seconds=30) as lease:
        return [lease.epoch]


def test_the_lease_connection_is_a_connection_of_its_own(database_url: str, engine: Engine) -> None:
    """Closing the engine's pool must not end the lease (nor returning it to the pool)."""
    with run_lease(engine, "holder") as lease:
        engine.dispose()
        lease.confirm()
        conn = psycopg2.connect(libpq_url(database_url))
        try:
            with conn.cursor() as cursor:
                cursor.execute(f"SELECT pg_try_advisory_lock(%s, {LEDGER_KEY})", (RUN_LOCK,))
                assert cursor.fetchone() == (False,)
        finally:
            conn.close()
