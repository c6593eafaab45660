"""Building the SparkSession the engine runs in."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

LOOPBACK = "127.0.0.1"


def build_session(
    master: str,
    app_name: str = "streaming-ledger",
    driver_host: str = LOOPBACK,
    driver_memory: str = "4g",
) -> SparkSession:
    """A session on `master` (`local[*]`, `local[2]`, `spark://127.0.0.1:7077`, ...).

    Python workers run this interpreter, so they import the same `ledger_engine`. The driver
    binds to 127.0.0.1 unless `driver_host` (`LEDGER_SPARK_DRIVER_HOST`) names the host that
    cluster workers reach it by (in docker compose, the Airflow scheduler's container).
    `driver_memory` sizes the driver's JVM, which in local mode also holds the executors'
    cached blocks; it takes effect only for the first session of a process.
    """
    # Python workers are started from PYSPARK_PYTHON, which the builder's config does not reach
    # in local mode; without it they run whatever `python3` is first on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if driver_host == LOOPBACK:
        # Read by the JVM at launch: without it Spark resolves the machine's host name and
        # binds (and warns about) whatever address that gives.
        os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)
    session = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.pyspark.python", sys.executable)
        .config("spark.pyspark.driver.python", sys.executable)
        .config("spark.driver.host", driver_host)
        .config("spark.driver.bindAddress", LOOPBACK if driver_host == LOOPBACK else "0.0.0.0")
        .config("spark.driver.memory", driver_memory)
        .config("spark.driver.maxResultSize", "0")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session
