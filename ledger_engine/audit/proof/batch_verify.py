"""The batch audit's proof from PostgreSQL alone, in Python like `ledger verify`, at a cost of
the batches in scope (never the ledger's history):

- the hash chain over the scope (`chain.verify_chain_slice`): each batch row in scope hashes to
  its `batch_hash` and names the hash of the batch before it, and the batch before the scope
  still has the hash the last passing audit recorded in its mark;
- per table, the engine's Merkle digests (`merkle_scope.scope_tree_checks`): they hash to the
  root recorded in the newest batch row, and less the scope's net changes in the change log
  they hash to the root recorded in the batch before the scope;
- the batch counts of the scope (the SQL of the batch suite's rules of that name, with the
  scope bound as parameters).

Everything is read in one consistent read (REPEATABLE READ), the scope first: a batch
committed while the audit runs is in none of its numbers, and is the next audit's. The
transaction runs under the batch audit's planner settings (`ledger_engine.audit.session`).
"""

from __future__ import annotations

from sqlalchemy import Connection, Engine, text

from ledger_engine.audit.expectations.queries import (
    batch_contiguity_query,
    batch_counts_query,
    bound_to_scope,
)
from ledger_engine.audit.findings import AuditScope, CheckResult
from ledger_engine.audit.proof.chain import verify_chain_slice
from ledger_engine.audit.proof.merkle_scope import scope_tree_checks
from ledger_engine.audit.proof.verify import counts_check
from ledger_engine.audit.scope import batch_scope, last_mark
from ledger_engine.audit.session import set_locally
from ledger_engine.audit.sql_files import BATCHES
from ledger_engine.core.declarations import StreamingLedger

COUNTS = "batch counts in scope equal the rows they describe"


def verify_batches(engine: Engine, ledger: StreamingLedger) -> tuple[AuditScope, list[CheckResult]]:
    """The scope (the batches after the last mark, to the newest) and every check over it,
    chain first (it proves the roots the Merkle checks use)."""
    with engine.connect() as conn:
        conn = conn.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin():
            set_locally(conn)
            mark = last_mark(conn)
            scope = batch_scope(conn, mark)
            checks = [
                verify_chain_slice(conn, scope, mark),
                *scope_tree_checks(conn, ledger, scope),
                verify_counts_in_scope(conn, scope),
            ]
    return scope, checks


def verify_counts_in_scope(conn: Connection, scope: AuditScope) -> CheckResult:
    """Each batch row in scope counts the rows of its batch; no log rows of a batch from the
    scope on without a batch row."""
    bounds = {"first_batch": scope.first_batch, "last_batch": scope.last_batch}
    wrong = conn.execute(text(bound_to_scope(batch_counts_query(BATCHES))), bounds).all()
    orphans = conn.execute(text(bound_to_scope(batch_contiguity_query(BATCHES))), bounds).all()
    return counts_check(COUNTS, wrong, orphans)
