"""One pipeline run at a time per system of record: a lease with a fencing token.

A run holds the lease for its whole duration as a PostgreSQL session advisory lock on a
connection of its own. PostgreSQL frees it the moment that connection ends, so a holder that
is killed (SIGKILL, a power cut, a lost machine once TCP gives up) releases it without anyone
cleaning up after it. Taking the lease increments the fencing epoch in `ledger_fence`
(`sql/0008`); every write the run makes to the system of record (each Spark task's staging,
each batch commit) first reads the epoch under a share lock and goes on only if it is still
the run's own (`check_fence`). A run that lost its lease while its Spark tasks kept going can
therefore never write after the run that took the lease from it: the new run's epoch increment
waits for any such write in flight, and every later one is refused.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg2
from sqlalchemy import Engine

from ledger_engine.errors import Fenced, LeaseLost, LedgerBusy
from ledger_engine.store.locks import RUN_LOCK
from ledger_engine.store.sql_files import statement

# The run lease is the advisory lock `RUN_LOCK`. Advisory locks are scoped to a database, and
# one database may hold several ledgers, one per schema: the lock's second key is the hash of
# the ledger's schema (`LEDGER_KEY`), so that each ledger has a lease of its own. (Two schemas
# whose names hash alike would share one: a run waits for the other, which is safe.)
# The lock's second key as SQL, as the statements of sql/lease/ and sql/commit/lock.sql write
# it (kept here for whoever takes the same lock by hand, e.g. a test).
LEDGER_KEY = "hashtext(current_schema())"
POLL_SECONDS = 0.5

_READ_FENCE = statement("lease/read_fence")
_CURRENT_HOLDER = statement("lease/current_holder")
_TRY_LOCK = statement("lease/try_lock")
_UNLOCK = statement("lease/unlock")
_NEXT_EPOCH = statement("lease/next_epoch")
_ABANDON_RUNS = statement("lease/abandon_runs")
_RECORD_RUN = statement("lease/record_run")
_END_RUN = statement("lease/end_run")


@dataclass(frozen=True)
class Holder:
    """A run as `ledger_runs` records it."""

    epoch: int
    holder: str
    host: str
    pid: int
    started_at: datetime

    def describe(self) -> str:
        return (
            f"run {self.epoch} ({self.holder}, pid {self.pid} on {self.host}, "
            f"started {self.started_at:%Y-%m-%d %H:%M:%S %Z})"
        )


@dataclass(frozen=True)
class RunLease:
    """The lease a run holds; `epoch` is its fencing token."""

    epoch: int
    holder: str
    _conn: Any = field(default=None, compare=False, repr=False)

    def confirm(self) -> None:
        """Raise `LeaseLost` unless the lease's connection is alive and still holds it, or
        `Fenced` if another run has taken it since. Cheap: call it before each step that
        writes."""
        assert self._conn is not None, "a lease from run_lease()"
        try:
            with self._conn.cursor() as cursor:
                check_fence(cursor, self.epoch)
        except psycopg2.Error as exc:
            cause = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise LeaseLost(
                f"the connection holding this run's lease (epoch {self.epoch}) was lost "
                f"({cause}): the run stops so that no two runs ever write at once"
            ) from exc


def check_fence(cursor: Any, epoch: int) -> None:
    """Raise `Fenced` unless `epoch` is still the current one. Call it inside the transaction
    whose writes it guards: the share lock it takes keeps a new run from taking the lease
    until that transaction ends."""
    cursor.execute(_READ_FENCE)
    row = cursor.fetchone()
    assert row is not None, "ledger_fence has its one row (sql/0008)"
    if row[0] != epoch:
        raise Fenced(
            f"this run's lease (epoch {epoch}) was taken over by run {row[0]}: "
            "its writes are refused; the run that holds the lease completes the work"
        )


def current_holder(cursor: Any) -> Holder | None:
    """The newest run that has not ended (it may have died without saying so)."""
    cursor.execute(_CURRENT_HOLDER)
    row = cursor.fetchone()
    return Holder(*row) if row is not None else None


@contextmanager
def run_lease(
    engine: Engine,
    holder: str,
    *,
    wait_seconds: float = 0.0,
    on_wait: Callable[[Holder | None, float], None] | None = None,
) -> Iterator[RunLease]:
    """Hold the lease for the `with` block, waiting up to `wait_seconds` for another holder.

    Raises `LedgerBusy` (naming the holder) if the lease stays taken. `on_wait(holder,
    waited)` is called while waiting. On exit the run is recorded as finished, or failed if
    the block raised.
    """
    # A connection of the lease's own, out of the pool: closing it must end the session.
    pooled = engine.raw_connection()
    pooled.detach()
    conn = pooled.dbapi_connection
    conn.autocommit = True
    try:
        _acquire(conn, wait_seconds, on_wait)
        lease = _begin_run(conn, holder)
        outcome = "failed"
        try:
            yield lease
            outcome = "finished"
        finally:
            _end_run(conn, lease, outcome)
    finally:
        conn.close()


def _acquire(
    conn: Any, wait_seconds: float, on_wait: Callable[[Holder | None, float], None] | None
) -> None:
    started = time.monotonic()
    with conn.cursor() as cursor:
        while True:
            cursor.execute(_TRY_LOCK, (RUN_LOCK,))
            if cursor.fetchone()[0]:
                return
            waited = time.monotonic() - started
            holder = current_holder(cursor)
            if waited >= wait_seconds:
                who = holder.describe() if holder is not None else "another run"
                raise LedgerBusy(
                    f"the ledger is busy: {who} holds the run lease; waited {waited:.0f} s "
                    f"of {wait_seconds:.0f} s. Nothing was done: run again when it has ended "
                    "(or wait longer: LEDGER_RUN_WAIT_SECONDS, `ledger run --wait`)."
                )
            if on_wait is not None:
                on_wait(holder, waited)
            time.sleep(min(POLL_SECONDS, max(0.0, wait_seconds - waited)))


def _begin_run(conn: Any, holder: str) -> RunLease:
    """Take the next epoch and record the run, in one transaction."""
    conn.autocommit = False
    try:
        with conn.cursor() as cursor:
            cursor.execute(_NEXT_EPOCH)
            epoch = cursor.fetchone()[0]
            # Whoever held the lease before without ending its run was killed.
            cursor.execute(_ABANDON_RUNS)
            cursor.execute(_RECORD_RUN, (epoch, holder, socket.gethostname(), os.getpid()))
        conn.commit()
    finally:
        conn.autocommit = True
    return RunLease(epoch, holder, conn)


def _end_run(conn: Any, lease: RunLease, outcome: str) -> None:
    try:
        with conn.cursor() as cursor:
            cursor.execute(_END_RUN, (outcome, lease.epoch))
            cursor.execute(_UNLOCK, (RUN_LOCK,))
    except psycopg2.Error:
        # The connection is gone (the server restarted, or cut us off): so is the lock, and
        # the next run records this one as abandoned.
        pass
