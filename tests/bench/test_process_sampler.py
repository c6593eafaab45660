"""The benchmark's CPU by process (`bench.measure.ProcessSampler`) puts each process's work
where it was done: the measuring process's own loop under the driver, a query's under the
PostgreSQL backend that ran it, a child process's under the workers."""

from __future__ import annotations

import subprocess
import sys
import time

import psycopg2

from bench.measure import ProcessSampler
from ledger_engine.store.staging import dsn_of

DRIVER = "driver (this process)"
BACKENDS = "PostgreSQL backends"
WORKERS = "Python workers"


def busy(seconds: float) -> None:
    """Burn this process's CPU for about `seconds`."""
    until = time.process_time() + seconds
    while time.process_time() < until:
        pass


def test_each_process_cpu_is_counted_under_its_kind(database_url: str) -> None:
    conn = psycopg2.connect(dsn_of(database_url))
    try:
        with ProcessSampler() as sampler, conn.cursor() as cursor:
            busy(0.5)
            # A query that keeps its backend on the CPU for a while, alone.
            cursor.execute("SELECT count(*) FROM generate_series(1, 3000000) AS g(n)")
            assert cursor.fetchone() == (3_000_000,)
            child = [
                sys.executable,
                "-c",
                "import time\nt = time.process_time() + 0.5\nwhile time.process_time() < t: pass",
            ]
            subprocess.run(child, check=True)
    finally:
        conn.close()
    cpu = sampler.cpu_seconds()
    assert cpu[DRIVER] >= 0.4, cpu
    assert cpu[BACKENDS] >= 0.1, cpu
    assert cpu.get(WORKERS, 0.0) >= 0.2, cpu
    assert sampler.wall >= 1.0
    assert sampler.peak > 0
