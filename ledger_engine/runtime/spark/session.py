"""Building the SparkSession the engine runs in."""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
from pathlib import Path
from subprocess import PIPE
from typing import IO, Literal

from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import launch_gateway
from pyspark.sql import SparkSession

LOOPBACK = "127.0.0.1"

# Spark's logging set-up, read by the driver JVM before it logs anything (see the file).
LOG4J2_PROPERTIES = Path(__file__).with_name("log4j2.properties")

# How much the JVMs compile (`build_session`): `quick`, their quick compiler (C1) alone;
# `full`, the default tiers (C1, then the optimizing C2 for hot code).
Jit = Literal["quick", "full"]
_QUICK_JIT = "-XX:TieredStopAtLevel=1"

# What the driver JVM writes on stderr, as Python log records (see relay_jvm_output).
JVM_LOGGER = logging.getLogger("ledger_engine.spark")

# A line of the layout in log4j2.properties: `LEVEL category: message`.
_LOG4J_LINE = re.compile(r"^(TRACE|DEBUG|INFO|WARN|ERROR|FATAL) (\S+: .*)$")
_LEVELS = {
    "TRACE": logging.DEBUG,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "ERROR": logging.ERROR,
    "FATAL": logging.CRITICAL,
}
# Printed by the JVM itself (not log4j) on every start, because Spark's launcher always adds the
# optional vector module; no setting silences it and there is nothing to act on. Relayed at
# DEBUG, below what a task log shows.
_JVM_BANNERS = ("WARNING: Using incubator modules:",)
# Spark's warnings that say nothing to a user of the platform, relayed at DEBUG too: adaptive
# execution is on for the session's batch jobs (reconciliation's joins) and Spark turns it off
# by itself for the streaming query, warning at every run.
_SAYS_NOTHING = ("spark.sql.adaptive.enabled is not supported in streaming",)


def build_session(
    master: str,
    app_name: str = "streaming-ledger",
    driver_host: str = LOOPBACK,
    driver_memory: str = "4g",
    jit: Jit = "quick",
) -> SparkSession:
    """A session on `master` (`local[*]`, `local[2]`, `spark://127.0.0.1:7077`, ...).

    Python workers run this interpreter, so they import the same `ledger_engine`. The driver
    binds to 127.0.0.1 unless `driver_host` (`LEDGER_SPARK_DRIVER_HOST`) names the host that
    cluster workers reach it by (in docker compose, the Airflow scheduler's container).
    `driver_memory` sizes the driver's JVM, which in local mode also holds the executors'
    cached blocks; it takes effect only for the first session of a process, as does `jit`.

    `jit` is how much the JVMs (the driver's, and a cluster's executors') compile. The engine's
    JVM work is moving parcels of a few megabytes (`columnar.parcels`), for which the quick
    compiler's code is as fast, while the optimizing compiler spent 3-4 CPU seconds per
    process compiling, on the cores the Python workers run on: `quick` (the default) made a
    run of 10^6 transfers on `local[2]` 9% faster (JVM CPU 13.4 -> 6.9 s). Work done in the
    JVM itself, as reconciliation's joins, wants `full`: with `quick` the matcher took 26%
    longer.

    Spark logs warnings and errors only, through the `ledger_engine.spark` logger at their own
    level (see `relay_jvm_output`); py4j's connection chatter is kept below warnings.
    """
    # Python workers are started from PYSPARK_PYTHON, which the builder's config does not reach
    # in local mode; without it they run whatever `python3` is first on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if driver_host == LOOPBACK:
        # Read by the JVM at launch: without it Spark resolves the machine's host name and
        # binds (and warns about) whatever address that gives.
        os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)
    # py4j logs every connection it opens and closes at INFO (DEBUG for each command).
    logging.getLogger("py4j").setLevel(logging.WARNING)
    conf = session_conf(master, app_name, driver_host, driver_memory, jit)
    # The first session of a process launches the JVM: launch it here, with its stderr relayed.
    # Later ones reuse that JVM (pyspark keeps it in SparkContext._gateway after a stop).
    if SparkContext._gateway is None:
        gateway = launch_gateway(conf, popen_kwargs={"stderr": PIPE})
        relay_jvm_output(gateway.proc.stderr, JVM_LOGGER)
        SparkContext(conf=conf, gateway=gateway)
    return SparkSession.builder.config(conf=conf).getOrCreate()


def session_conf(
    master: str, app_name: str, driver_host: str, driver_memory: str, jit: Jit = "quick"
) -> SparkConf:
    """The session's settings (see `build_session`)."""
    compiler = [_QUICK_JIT] if jit == "quick" else []
    # Read by the JVM as it starts, so that not even its start-up lines use Spark's default
    # set-up (everything from INFO, raw, on stderr).
    driver_options = " ".join([f"-Dlog4j2.configurationFile={LOG4J2_PROPERTIES}", *compiler])
    conf = (
        SparkConf()
        .setMaster(master)
        .setAppName(app_name)
        .set("spark.pyspark.python", sys.executable)
        .set("spark.pyspark.driver.python", sys.executable)
        .set("spark.driver.host", driver_host)
        .set("spark.driver.bindAddress", LOOPBACK if driver_host == LOOPBACK else "0.0.0.0")
        .set("spark.driver.memory", driver_memory)
        .set("spark.driver.maxResultSize", "0")
        .set("spark.driver.extraJavaOptions", driver_options)
        .set("spark.ui.enabled", "false")
        .set("spark.ui.showConsoleProgress", "false")
        .set("spark.sql.shuffle.partitions", "8")
        # Most of what the engine caches and shuffles is parcels, compressed already
        # (`columnar.parcels`): compressing them again costs the JVM CPU and saves nothing.
        .set("spark.sql.inMemoryColumnarStorage.compressed", "false")
        .set("spark.shuffle.compress", "false")
        .set("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
    )
    if compiler:
        conf.set("spark.executor.extraJavaOptions", " ".join(compiler))
    elif _QUICK_JIT in (inherited := (conf.get("spark.executor.extraJavaOptions") or "").split()):
        # Made while a JVM runs, the configuration starts from that JVM's settings: those of a
        # quick session started before in this process would hold a cluster's executors at
        # the quick compiler. Their other options stay as the defaults have them.
        kept = " ".join(option for option in inherited if option != _QUICK_JIT)
        conf.set("spark.executor.extraJavaOptions", kept)
    return conf


def relay_jvm_output(stream: IO[bytes], logger: logging.Logger) -> threading.Thread:
    """Log each line the driver JVM writes to `stream` (its stderr) through `logger`, at the
    line's own level, in a daemon thread that ends with the stream.

    Airflow shows every line a task writes to stderr as an error, whatever it says; as log
    records, Spark's warnings are warnings there and in the CLI. A log4j line carries its level
    (the layout of log4j2.properties); the lines after it (an exception's stack) keep that
    level; the JVM's start-up banner is INFO; any other line (the JVM or launcher failing) is a
    warning.
    """

    def relay() -> None:
        level = logging.WARNING
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", errors="replace").rstrip()
            if not line:
                continue
            parsed = _LOG4J_LINE.match(line)
            if parsed:
                level, line = _LEVELS[parsed.group(1)], parsed.group(2)
                if any(noise in line for noise in _SAYS_NOTHING):
                    logger.debug("%s", line)
                    continue
            elif line.startswith(_JVM_BANNERS):
                logger.debug("%s", line)
                continue
            logger.log(level, "%s", line)
        stream.close()

    thread = threading.Thread(target=relay, name="spark-jvm-stderr", daemon=True)
    thread.start()
    return thread
