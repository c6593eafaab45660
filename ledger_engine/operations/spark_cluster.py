"""A Spark standalone cluster on this machine: a master and workers on 127.0.0.1, started from
the pip-installed pyspark, for trying a job on a real cluster (the cluster test, the
benchmark's `standalone` variant) without installing Spark.

Each process runs `spark-class` with its output in a log file of the cluster's folder; the
context manager waits until the master counts every worker alive, and stops them all (the
workers first) when it ends, whatever happened inside.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).parent
LOOPBACK = "127.0.0.1"
START_TIMEOUT = 90.0  # seconds for the master, then for every worker, to come up


def free_port() -> int:
    """A TCP port on the loopback address that nothing listens on now."""
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def wait_for(condition: Callable[[], bool], what: str, timeout: float = START_TIMEOUT) -> None:
    """Poll `condition` until it holds (a refused connection counts as not yet)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise TimeoutError(f"timed out waiting for {what}")


def alive_workers(ui_port: int) -> int:
    """How many workers the master on `ui_port` (its web UI) counts alive."""
    address = f"http://{LOOPBACK}:{ui_port}/json"
    with urllib.request.urlopen(address, timeout=2) as response:
        return json.load(response)["aliveworkers"]


@contextmanager
def standalone_cluster(
    folder: Path, workers: int = 2, cores: int = 1, memory: str = "1g"
) -> Iterator[str]:
    """A master and `workers` workers of `cores` cores and `memory` each; yields the master's
    URL (`spark://127.0.0.1:<port>`). Logs and work folders go under `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": LOOPBACK,
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOG_DIR": str(folder / "logs"),
    }
    port, ui_port = free_port(), free_port()
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    started: list[subprocess.Popen] = []

    def start(name: str, *args: str) -> None:
        log = open(folder / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        started.append(
            subprocess.Popen([spark_class, *args], env=env, stdout=log, stderr=subprocess.STDOUT)
        )

    try:
        start(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host",
            LOOPBACK,
            "--port",
            str(port),
            "--webui-port",
            str(ui_port),
        )
        wait_for(lambda: alive_workers(ui_port) == 0, "the master")
        for n in range(1, workers + 1):
            start(
                f"worker-{n}",
                "org.apache.spark.deploy.worker.Worker",
                f"spark://{LOOPBACK}:{port}",
                "--host",
                LOOPBACK,
                "--cores",
                str(cores),
                "--memory",
                memory,
                "--webui-port",
                str(free_port()),
                "--work-dir",
                str(folder / f"work-{n}"),
            )
        wait_for(lambda: alive_workers(ui_port) == workers, f"{workers} workers")
        yield f"spark://{LOOPBACK}:{port}"
    finally:
        for process in reversed(started):
            process.terminate()
        for process in started:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
