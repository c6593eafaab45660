"""Building the SparkSession the engine runs in."""

from __future__ import annotations

import sys

from pyspark.sql import SparkSession


def build_session(master: str, app_name: str = "streaming-ledger") -> SparkSession:
    """A session on `master` (`local[*]`, `local[2]`, `spark://127.0.0.1:7077`, ...).

    Python workers run this interpreter, so they import the same `ledger_engine`; the driver
    binds to 127.0.0.1 because the platform's servers never listen on other addresses.
    """
    session = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.pyspark.python", sys.executable)
        .config("spark.pyspark.driver.python", sys.executable)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session
