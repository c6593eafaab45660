"""The benchmark's CPU by process (`bench.measure.ProcessSampler`) puts each process's work
where it was done: the measuring process's own loop under the driver, a query's under the
PostgreSQL backend that ran it, a child process's under the workers."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import psycopg2

from bench.measure import ProcessSampler
from ledger_engine.store.database import libpq_url

DRIVER = "driver (this process)"
BACKENDS = "PostgreSQL backends"
WORKERS = "Python workers"
JVM = "Spark JVM"
BUSY_HALF_SECOND = "import time\nt = time.process_time() + 0.5\nwhile time.process_time() < t: pass"


def busy(seconds: float) -> None:
    """Burn this process's CPU for about `seconds`."""
    until = time.process_time() + seconds
    while time.process_time() < until:
        pass


def test_each_process_cpu_is_counted_under_its_kind(database_url: str) -> None:
    conn = psycopg2.connect(libpq_url(database_url))
    try:
        with ProcessSampler() as sampler, conn.cursor() as cursor:
            busy(0.5)
            # A query that keeps its backend on the CPU for a while, alone.
            cursor.execute("SELECT count(*) FROM generate_series(1, 3000000) AS g(n)")
            assert cursor.fetchone() == (3_000_000,)
            subprocess.run([sys.executable, "-c", BUSY_HALF_SECOND], check=True)
    finally:
        conn.close()
    cpu = sampler.cpu_seconds()
    assert cpu[DRIVER] >= 0.4, cpu
    assert cpu[BACKENDS] >= 0.1, cpu
    assert cpu.get(WORKERS, 0.0) >= 0.2, cpu
    assert sampler.wall >= 1.0
    assert sampler.peak > 0


def test_a_child_that_execs_the_jvm_is_counted_as_the_jvm_from_then_on(tmp_path: Path) -> None:
    # Spark starts its JVM through a shell script that execs `java`: one pid and start time,
    # first a shell, then the JVM. A Python named `java` stands in for it here.
    java = tmp_path / "java"
    java.symlink_to(sys.executable)
    # The shell waits long enough to be sampled as itself first.
    script = f"sleep 0.5; exec {java} -c '{BUSY_HALF_SECOND}'"
    with ProcessSampler() as sampler:
        subprocess.run(["sh", "-c", script], check=True)
    cpu = sampler.cpu_seconds()
    assert cpu.get(JVM, 0.0) >= 0.4, cpu
    # The JVM's seconds are not counted for the shell it was.
    assert cpu.get(WORKERS, 0.0) < 0.2, cpu


def test_children_that_end_between_samples_are_counted_in_full() -> None:
    # Each child burns 50 ms, less than one sampling interval: the samples may never see
    # one, the kernel's count of waited-for children does.
    child = "import time\nt = time.process_time() + 0.05\nwhile time.process_time() < t: pass"
    with ProcessSampler() as sampler:
        for _ in range(6):
            subprocess.run([sys.executable, "-c", child], check=True)
    assert sampler.cpu_seconds().get(WORKERS, 0.0) >= 0.3
