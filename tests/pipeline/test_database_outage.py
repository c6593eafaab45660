"""The system of record going away mid-batch gives a clear error, and a rerun completes the
batch exactly once."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pgserver
import psycopg2
import pytest
from sqlalchemy import Engine

from ledger_engine.apps.bank.generator import generate_events
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.audit.rederivation.oracle import serial_differences
from ledger_engine.config import Settings
from ledger_engine.errors import BatchFailed
from ledger_engine.faults import BEFORE_COMMIT, DURING_EXECUTION, FaultPlan, FaultSwitch
from ledger_engine.pipeline.event_inbox import write_event_files
from ledger_engine.pipeline.job import run_pipeline
from ledger_engine.store.database import libpq_url, open_store
from ledger_engine.store.embedded import stop_embedded
from tests.support.database import rows
from tests.support.recorded_ledger import pipeline_env

LEDGER = build_ledger()


def land(inbox: Path) -> None:
    """Two files: two micro-batches."""
    write_event_files(generate_events(160, accounts=20, seed=41), inbox, events_per_file=80)


def terminate_every_other_backend(database_url: str) -> None:
    """What an administrator's `pg_terminate_backend` (or a failover) does to the pipeline's
    connections: every session on the database but this one ends at once."""
    conn = psycopg2.connect(libpq_url(database_url))
    try:
        conn.autocommit = True
        with conn.cursor() as cursor:
            cursor.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            assert cursor.fetchone()[0] > 0
    finally:
        conn.close()


def test_connections_terminated_during_the_commit_fail_the_batch_and_a_rerun_completes_it(
    database_url: str, engine: Engine, spark, tmp_path: Path
) -> None:
    settings = Settings.from_env(pipeline_env(tmp_path, database_url))
    land(settings.inbox)
    outage = FaultSwitch(
        FaultPlan(BEFORE_COMMIT, 1), lambda *_: terminate_every_other_backend(database_url)
    )

    with pytest.raises(BatchFailed, match="micro-batch 1 failed: the connection to the system"):
        run_pipeline(settings, spark=spark, engine=engine, faults=outage)
    assert outage.fired
    assert rows(engine, "SELECT batch_id FROM ledger_batches") == [(0,)]

    rerun = run_pipeline(settings, spark=spark, engine=engine)

    assert [b.batch_id for b in rerun.batches] == [1]
    assert serial_differences(engine, LEDGER, settings.inbox) == []


@pytest.fixture
def embedded_settings(tmp_path: Path) -> Iterator[Settings]:
    """Settings on an embedded server of the test's own, which it may restart."""
    env = pipeline_env(tmp_path, "")
    del env["LEDGER_DATABASE_URL"]
    settings = Settings.from_env(env)
    assert settings.database_url is None
    try:
        yield settings
    finally:
        stop_embedded(settings.pgdata)


def restart_server(pgdata: Path) -> None:
    """`pg_ctl restart -m fast`: every connection ends, the server comes back."""
    user = "pgserver" if os.geteuid() == 0 else None  # as the server's owner (see embedded)
    pgserver.pg_ctl(["-w", "restart", "-m", "fast"], pgdata=pgdata, user=user)


def test_a_server_restart_during_execution_fails_the_batch_and_a_rerun_completes_it(
    embedded_settings: Settings, spark
) -> None:
    settings = embedded_settings
    land(settings.inbox)
    engine = open_store(settings)
    restart = FaultSwitch(
        FaultPlan(DURING_EXECUTION, 1), lambda *_: restart_server(settings.pgdata)
    )
    try:
        with pytest.raises(BatchFailed, match=r"micro-batch 1 failed: .*lease .* was lost"):
            run_pipeline(settings, spark=spark, engine=engine, faults=restart)
        assert restart.fired
        assert rows(engine, "SELECT batch_id FROM ledger_batches") == [(0,)]

        rerun = run_pipeline(settings, spark=spark, engine=engine)

        assert [b.batch_id for b in rerun.batches] == [1]
        assert serial_differences(engine, LEDGER, settings.inbox) == []
        assert rows(engine, "SELECT outcome FROM ledger_runs ORDER BY epoch") == [
            ("abandoned",),
            ("finished",),
        ]
    finally:
        engine.dispose()
