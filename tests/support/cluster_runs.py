"""What the Spark-cluster test runs on a standalone cluster (tests/engine/cluster_job.py, in a
process of its own) and again in-process to compare: the bank's events (`EVENTS`), a user's
application loaded from its file (`USER_APP`) and the arguments of its `sample_events`
(`USER_EVENTS`), the arguments of `user_app_events` for an application in several modules
(`MULTI_MODULE_EVENTS`), and the execution options of every run (`OPTIONS`)."""

from __future__ import annotations

from pathlib import Path

from ledger_engine.apps.bank.generator import generate_events
from ledger_engine.runtime.spark.engine import ExecutionOptions

EVENTS = generate_events(1_000, accounts=200, seed=17, bad_fraction=0.03, duplicate_fraction=0.03)
OPTIONS = ExecutionOptions(bins=2, rounds=2)
USER_APP = f"{Path(__file__).parent / 'apps' / 'simple_trade.py'}:build_ledger"
USER_EVENTS = dict(count=500, accounts=25, seed=9)
MULTI_MODULE_EVENTS = dict(count=400, accounts=20, seed=10)
