"""Helpers for tests that run the pipeline as a separate process and compare what it stored."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from sqlalchemy import Engine, text

from ledger_engine.config import PROJECT_ROOT

# Everything the system of record holds about its batches, minus what depends on the clock
# (commit times, durations) and the record of runs (each run takes a lease of its own).
RECORDED = {
    "ledger_batches": "SELECT batch_id, ledger, input_fingerprint, input_files, events_ingested,"
    " applied, rejected, duplicates, changes, results, merkle_roots, prev_hash, batch_hash"
    " FROM ledger_batches ORDER BY batch_id",
    "ledger_events": "SELECT * FROM ledger_events ORDER BY batch_id, position",
    "ledger_change_log": "SELECT * FROM ledger_change_log ORDER BY batch_id, position, seq",
    "ledger_results": "SELECT * FROM ledger_results ORDER BY batch_id, position, seq",
    "ledger_rejections": "SELECT * FROM ledger_rejections ORDER BY batch_id, position",
    "ledger_duplicates": "SELECT * FROM ledger_duplicates ORDER BY batch_id, position",
    "ledger_requests": "SELECT * FROM ledger_requests ORDER BY request_id",
    "ledger_merkle_buckets": "SELECT * FROM ledger_merkle_buckets ORDER BY table_name, bucket",
    "accounts": "SELECT key, value FROM accounts ORDER BY key",
    "asset_ledger": "SELECT key, value FROM asset_ledger ORDER BY key",
}


def ledger_dump(engine: Engine) -> dict[str, list[tuple]]:
    """Every recorded row, table by table, in a fixed order."""
    with engine.connect() as conn:
        return {
            name: [
                tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)
                for row in conn.execute(text(query))
            ]
            for name, query in RECORDED.items()
        }


def ledger_command(
    args: list[str], env: Mapping[str, str], *, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """Run `ledger <args>` as a process of its own with `env` added to this one's."""
    return subprocess.run(
        [sys.executable, "-m", "ledger_engine.cli", *args],
        env={**os.environ, **env},
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def pipeline_env(data_dir: Path, database_url: str, files_per_batch: int = 1) -> dict[str, str]:
    """The settings of a small pipeline run on two local cores."""
    return {
        "LEDGER_DATA_DIR": str(data_dir),
        "LEDGER_DATABASE_URL": database_url,
        "LEDGER_FILES_PER_BATCH": str(files_per_batch),
        "LEDGER_SPARK_MASTER": "local[2]",
        "LEDGER_SPARK_DRIVER_MEMORY": "1g",
    }
