"""`run_spark` on a real Spark standalone cluster: a master and two workers on 127.0.0.1,
started from the pip-installed pyspark, give the same result as `local[2]`, for the bank, for
a user's application in a file of its own, and for one in a package of several modules, which
the workers receive from the platform."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger_engine import run_serial, run_spark
from ledger_engine.apps import load_ledger
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.operations.spark_cluster import standalone_cluster
from tests.support.cluster_runs import EVENTS, MULTI_MODULE_EVENTS, OPTIONS, USER_APP, USER_EVENTS
from tests.support.user_apps import Layout, user_app_events, write_user_app

PROJECT = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[str]:
    """A standalone master and two one-core workers; yields the master URL."""
    with standalone_cluster(tmp_path_factory.mktemp("spark-cluster"), workers=2) as master:
        yield master


def test_a_batch_on_a_two_worker_cluster_equals_local_two(cluster: str, spark, tmp_path) -> None:
    output = tmp_path / "result.pickle"
    # A package with a subpackage, relative imports, a data file and a call-time import.
    layout = Layout(True, True, "call time", limit_from_data_file=True, odd_names=True)
    multi_module = write_user_app(tmp_path / "their code", layout)
    subprocess.run(
        [sys.executable, "-m", "tests.engine.cluster_job", cluster, str(output), multi_module.spec],
        cwd=PROJECT,
        check=True,
        timeout=600,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
    )
    with open(output, "rb") as handle:
        on_cluster = pickle.load(handle)
    assert on_cluster["executors"] == 2, "both workers ran executors"
    ledger = build_ledger()
    local = run_spark(spark, ledger, EVENTS, options=OPTIONS)
    assert on_cluster["result"] == local == run_serial(ledger, EVENTS)
    user_ledger = load_ledger(USER_APP)
    from simple_trade import sample_events

    user_events = sample_events(**USER_EVENTS)
    assert on_cluster["user_result"] == run_serial(user_ledger, user_events)
    multi_module_events = user_app_events(**MULTI_MODULE_EVENTS)
    expected = run_serial(load_ledger(multi_module.spec), multi_module_events)
    assert on_cluster["multi_module_result"] == expected
    assert {r.detail for r in expected.rejections} >= {"over the limit", "insufficient funds"}
