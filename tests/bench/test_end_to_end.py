"""The benchmark's end-to-end variant (`ledger-run`) measures what a user runs: every landed
bank event committed by `ledger run --audit` in batches of the size asked for, and the batch
audit that follows them passed and recorded its mark."""

from __future__ import annotations

import argparse
from pathlib import Path

from sqlalchemy import text

from bench.measure import APPROACHES, land_generated
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.store.database import connect, ledger_url

EVENTS = 3_000
ACCOUNTS = 300
BATCH_EVENTS = 1_000  # three files of `ledger generate`'s 1,000 events: three batches


def test_ledger_run_commits_and_audits_every_landed_event(
    empty_database_url: str, tmp_path: Path
) -> None:
    args = argparse.Namespace(
        database_url=empty_database_url,
        data_dir=str(tmp_path / "data"),
        master="local[2]",
        batch_events=BATCH_EVENTS,
        size=EVENTS,
        accounts=ACCOUNTS,
    )
    land_generated(args)

    measured = APPROACHES["ledger-run"](args)

    assert measured["events"] == EVENTS
    assert measured["batches"] == EVENTS // BATCH_EVENTS
    assert 0 < measured["applied"] < EVENTS  # the generated mix holds faulty events and retries
    assert measured["seconds"] > 0
    engine = connect(ledger_url(empty_database_url, build_ledger()))
    try:
        with engine.connect() as conn:
            through = conn.execute(
                text("SELECT max(audited_through) FROM ledger_audit_marks")
            ).scalar_one()
    finally:
        engine.dispose()
    assert through == EVENTS // BATCH_EVENTS - 1  # the audit after the run covered every batch
    assert list((tmp_path / "data" / "reports").glob("*.html"))
