"""Run a bank batch, a batch of a user's own application loaded from its file, and a batch of
a user's application in several modules (`LEDGER_APP` given; the workers can only import
either if the platform sends them), with `run_spark` on a Spark master, and pickle the
`RunResult`s to a file. The events, the user's application and the options are
tests/support/cluster_runs.py's, which the test runs again in-process to compare.

Used by `test_spark_cluster.py` in a process of its own: a process holds one SparkContext, and
the test process's belongs to `local[2]`.

    python -m tests.engine.cluster_job <master URL> <output path> <LEDGER_APP of a multi-module app>
"""

from __future__ import annotations

import pickle
import sys
import time

from ledger_engine import run_spark
from ledger_engine.apps import load_ledger
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.runtime.spark.session import build_session
from tests.support.cluster_runs import EVENTS, MULTI_MODULE_EVENTS, OPTIONS, USER_APP, USER_EVENTS
from tests.support.user_apps import user_app_events

WORKERS = 2


def registered_executors(spark, wanted: int, timeout: float) -> int:
    """The executors registered with the driver, waiting up to `timeout` seconds for
    `wanted` of them: on a busy machine the workers' executors register after the session
    starts, and a batch run before they do would run on fewer."""
    deadline = time.monotonic() + timeout
    while True:
        # The driver's own block manager is listed too.
        count = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
        if count >= wanted or time.monotonic() > deadline:
            return count
        time.sleep(0.5)


def main(master: str, output: str, multi_module_app: str) -> None:
    spark = build_session(master, app_name="ledger-cluster-test", driver_memory="1g")
    try:
        executors = registered_executors(spark, WORKERS, timeout=120)
        result = run_spark(spark, build_ledger(), EVENTS, options=OPTIONS)
        user_ledger = load_ledger(USER_APP)
        from simple_trade import sample_events  # loaded from its file by load_ledger

        user_events = sample_events(**USER_EVENTS)
        user_result = run_spark(spark, user_ledger, user_events, options=OPTIONS)
        multi_module_events = user_app_events(**MULTI_MODULE_EVENTS)
        multi_module_result = run_spark(
            spark, load_ledger(multi_module_app), multi_module_events, options=OPTIONS
        )
    finally:
        spark.stop()
    results = {
        "executors": executors,
        "result": result,
        "user_result": user_result,
        "multi_module_result": multi_module_result,
    }
    with open(output, "wb") as handle:
        pickle.dump(results, handle)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
