"""The platform's PostgreSQL advisory locks, named in one place.

Each lock is a pair of keys: the first, a constant here, says *what* is locked; the second
says *which*, where there are several (a ledger's schema, a reconciliation's source; each SQL
file taking a lock says which). The constants are arbitrary, but no two may be equal, or two
kinds of work would wait for each other for no reason (`tests/store/test_locks.py`).
"""

from __future__ import annotations

MIGRATION_LOCK = 7_318_001  # schema migration (core and declared), per database
COMMIT_LOCK = 7_318_002  # a batch's commit, per ledger
RUN_LOCK = 7_318_003  # a pipeline run's lease, per ledger (`lease`)
STATEMENTS_LOCK = 7_318_004  # loading statement files, per ledger
RECONCILE_LOCK = 7_318_005  # reconciling a source (runs and people's work), per source

ADVISORY_LOCKS = {
    "migration": MIGRATION_LOCK,
    "commit": COMMIT_LOCK,
    "run": RUN_LOCK,
    "statements": STATEMENTS_LOCK,
    "reconcile": RECONCILE_LOCK,
}
assert len(set(ADVISORY_LOCKS.values())) == len(ADVISORY_LOCKS), ADVISORY_LOCKS
