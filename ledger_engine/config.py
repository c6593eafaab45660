"""Every setting of the platform, read from environment variables in one typed place.

| variable | default | meaning |
| --- | --- | --- |
| `LEDGER_DATABASE_URL` | unset: embedded PostgreSQL | SQLAlchemy URL of the system of record |
| `LEDGER_DATA_DIR` | `<project>/var` | root of every folder below |
| `LEDGER_INBOX` | `$LEDGER_DATA_DIR/inbox` | where event files land (`*.jsonl`) |
| `LEDGER_CHECKPOINT` | `$LEDGER_DATA_DIR/checkpoint` | one checkpoint per database and ledger |
| `LEDGER_PGDATA` | `$LEDGER_DATA_DIR/pgdata` | embedded PostgreSQL's data folder |
| `LEDGER_REPORTS` | `$LEDGER_DATA_DIR/reports` | audit reports and Data Docs |
| `LEDGER_EXPECTATIONS` | `<project>/expectations` | Great Expectations projects, one per ledger |
| `LEDGER_STATEMENTS` | `$LEDGER_DATA_DIR/statements` | statement files, a folder per source |
| `LEDGER_RECONCILIATION` | `<expectations>/<schema>/reconciliation.toml` | sources, rules |
| `LEDGER_SPARK_MASTER` | `local[*]` | Spark master URL (`spark://host:7077` for a cluster) |
| `LEDGER_SPARK_DRIVER_HOST` | `127.0.0.1` | host name cluster workers reach the Spark driver by |
| `LEDGER_SPARK_DRIVER_MEMORY` | `4g` | Spark driver JVM heap (local mode: executors too) |
| `LEDGER_FILES_PER_BATCH` | `4` | event files per micro-batch |
| `LEDGER_ROUND_COST` | `20000` | a round's fixed cost, in transactions (cutting batches) |
| `LEDGER_APP` | `ledger_engine.apps.bank.ledger:build_ledger` | the ledger's `module:function` |
| `LEDGER_RUN_WAIT_SECONDS` | `300` | how long a pipeline run waits for another run to end |
| `LEDGER_FAULT` | unset | tests: die at `point[@batch][:action]` (`ledger_engine.faults`) |
| `LEDGER_DAG_SCHEDULE` | `events` | `ledger_pipeline` on files landing; a cron: cron only; `none` |
| `LEDGER_REPLAY_SCHEDULE` | `@daily` | `ledger_replay`'s schedule (`none`: manual only) |
| `LEDGER_RECONCILE_SCHEDULE` | `@daily` | `ledger_reconcile`'s schedule (`none`: statements only) |
| `LEDGER_STATEMENT_POLL_SECONDS` | `30` | how often the triggerer looks for new statements |
| `LEDGER_EVENT_POLL_SECONDS` | `30` | how often the triggerer looks for new event files |
| `LEDGER_AIRFLOW_HOME` | `$LEDGER_DATA_DIR/airflow` | `ledger airflow`: its AIRFLOW_HOME |
| `LEDGER_AIRFLOW_PORT` | `8080` | `ledger airflow`: the UI's port on 127.0.0.1 (`0`: a free one) |
| `LEDGER_AIRFLOW_PARALLELISM` | `2` | `ledger airflow`: task instances running at once |
| `LEDGER_TRACEBACK` | unset | `1`: a failing `ledger` command shows its traceback (`--traceback`) |
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from ledger_engine.faults import FaultPlan

PROJECT_ROOT = Path(__file__).resolve().parents[1]
# `ledger_pipeline` runs when event files land (the `ledger_events` asset's watcher), not on a
# clock; a cron expression or preset instead runs it on that schedule only.
ON_EVENTS = "events"
PIPELINE_SCHEDULE = ON_EVENTS
REPLAY_SCHEDULE = "@daily"
RECONCILE_SCHEDULE = "@daily"
# Characters of a note on a break (a match by hand, a write-off): a reason, not a document.
NOTE_LIMIT = 2_000


def traceback_setting(env: Mapping[str, str]) -> bool:
    """LEDGER_TRACEBACK: whether a failing command shows its traceback beside its sentence
    (read apart from the other settings, since a failure to read them must honour it too)."""
    return (env.get("LEDGER_TRACEBACK") or "").strip().lower() in ("1", "true", "yes", "on")


def schedule_setting(value: str | None, default: str) -> str | None:
    """A DAG's schedule from its setting: unset or blank gives `default`, `none` (any case)
    manual runs only, anything else is a cron expression or preset for Airflow to check."""
    value = (value or "").strip()
    if not value:
        return default
    return None if value.lower() == "none" else value


@dataclass(frozen=True)
class Settings:
    """The platform's configuration; build it with `Settings.from_env()`."""

    database_url: str | None
    data_dir: Path
    inbox: Path
    # A folder of Structured Streaming checkpoints, one per database and ledger
    # (`ledger_engine.pipeline.checkpoint`).
    checkpoint: Path
    pgdata: Path
    reports: Path
    spark_master: str
    spark_driver_host: str
    spark_driver_memory: str
    files_per_batch: int
    round_cost: int
    app: str
    run_wait_seconds: float = 300.0
    fault: str | None = None
    # One Great Expectations project per ledger, in `<expectations>/<the ledger's schema>/gx`.
    expectations: Path = PROJECT_ROOT / "expectations"
    pipeline_schedule: str | None = PIPELINE_SCHEDULE
    replay_schedule: str | None = REPLAY_SCHEDULE
    reconcile_schedule: str | None = RECONCILE_SCHEDULE
    # How often `ledger_reconcile`'s statement watcher lists the statement inbox.
    statement_poll_seconds: float = 30.0
    # How often `ledger_pipeline`'s event watcher lists the inbox (schedule `events`).
    event_poll_seconds: float = 30.0
    # Statements land in `<statements>/<source's folder>/`; sources and rules are read from
    # `reconciliation`, or else from the ledger's own file beside its expectations.
    statements: Path = PROJECT_ROOT / "var" / "statements"
    reconciliation: Path | None = None
    # `ledger airflow` (operations/airflow_local.py): Airflow's home (config, SQLite metadata,
    # logs), the UI's port on 127.0.0.1 (0: any free port) and how many task instances run at
    # once (each may hold a Spark driver: a small machine fits two).
    airflow_home: Path = PROJECT_ROOT / "var" / "airflow"
    airflow_port: int = 8080
    airflow_parallelism: int = 2
    # A failing `ledger` command shows its traceback too (`cli.failures`), not only a sentence.
    traceback: bool = False

    def reconciliation_file(self, schema: str) -> Path:
        """The sources' declaration of the ledger whose schema is `schema`."""
        if self.reconciliation is not None:
            return self.reconciliation
        return self.expectations / schema / "reconciliation.toml"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        data_dir = Path(env.get("LEDGER_DATA_DIR", PROJECT_ROOT / "var")).resolve()
        files_per_batch = int(env.get("LEDGER_FILES_PER_BATCH", "4"))
        if files_per_batch < 1:
            raise ValueError(f"LEDGER_FILES_PER_BATCH must be >= 1, got {files_per_batch}")
        run_wait_seconds = float(env.get("LEDGER_RUN_WAIT_SECONDS", "300"))
        if run_wait_seconds < 0:
            raise ValueError(f"LEDGER_RUN_WAIT_SECONDS must be >= 0, got {run_wait_seconds}")
        statement_poll_seconds = float(env.get("LEDGER_STATEMENT_POLL_SECONDS") or "30")
        if statement_poll_seconds <= 0:
            raise ValueError(
                f"LEDGER_STATEMENT_POLL_SECONDS must be > 0, got {statement_poll_seconds}"
            )
        event_poll_seconds = float(env.get("LEDGER_EVENT_POLL_SECONDS") or "30")
        if event_poll_seconds <= 0:
            raise ValueError(f"LEDGER_EVENT_POLL_SECONDS must be > 0, got {event_poll_seconds}")
        airflow_port = int(env.get("LEDGER_AIRFLOW_PORT") or "8080")
        if not 0 <= airflow_port <= 65535:
            raise ValueError(f"LEDGER_AIRFLOW_PORT must be 0 to 65535, got {airflow_port}")
        airflow_parallelism = int(env.get("LEDGER_AIRFLOW_PARALLELISM") or "2")
        if airflow_parallelism < 1:
            raise ValueError(f"LEDGER_AIRFLOW_PARALLELISM must be >= 1, got {airflow_parallelism}")
        fault = env.get("LEDGER_FAULT") or None
        if fault is not None:
            FaultPlan.parse(fault)  # a mistyped fault fails here, not silently never fires
        return cls(
            database_url=env.get("LEDGER_DATABASE_URL") or None,
            data_dir=data_dir,
            inbox=Path(env.get("LEDGER_INBOX", data_dir / "inbox")).resolve(),
            checkpoint=Path(env.get("LEDGER_CHECKPOINT", data_dir / "checkpoint")).resolve(),
            pgdata=Path(env.get("LEDGER_PGDATA", data_dir / "pgdata")).resolve(),
            reports=Path(env.get("LEDGER_REPORTS", data_dir / "reports")).resolve(),
            spark_master=env.get("LEDGER_SPARK_MASTER", "local[*]"),
            spark_driver_host=env.get("LEDGER_SPARK_DRIVER_HOST", "127.0.0.1"),
            spark_driver_memory=env.get("LEDGER_SPARK_DRIVER_MEMORY", "4g"),
            files_per_batch=files_per_batch,
            round_cost=int(env.get("LEDGER_ROUND_COST", "20000")),
            app=env.get("LEDGER_APP", "ledger_engine.apps.bank.ledger:build_ledger"),
            run_wait_seconds=run_wait_seconds,
            fault=fault,
            expectations=Path(env.get("LEDGER_EXPECTATIONS", PROJECT_ROOT / "expectations")),
            pipeline_schedule=schedule_setting(env.get("LEDGER_DAG_SCHEDULE"), PIPELINE_SCHEDULE),
            replay_schedule=schedule_setting(env.get("LEDGER_REPLAY_SCHEDULE"), REPLAY_SCHEDULE),
            reconcile_schedule=schedule_setting(
                env.get("LEDGER_RECONCILE_SCHEDULE"), RECONCILE_SCHEDULE
            ),
            statement_poll_seconds=statement_poll_seconds,
            event_poll_seconds=event_poll_seconds,
            statements=Path(env.get("LEDGER_STATEMENTS", data_dir / "statements")).resolve(),
            reconciliation=(
                Path(env["LEDGER_RECONCILIATION"]) if env.get("LEDGER_RECONCILIATION") else None
            ),
            airflow_home=Path(env.get("LEDGER_AIRFLOW_HOME", data_dir / "airflow")).resolve(),
            airflow_port=airflow_port,
            airflow_parallelism=airflow_parallelism,
            traceback=traceback_setting(env),
        )

    def with_overrides(self, **changes: object) -> Settings:
        """A copy with some fields replaced (used by command-line flags)."""
        return replace(self, **changes)
