"""The SQL of every Great Expectations rule, whole-ledger and in scope: `sql/*.sql` filled in
for a declared table or invariant and a scope (`ledger_engine.audit.sql_files`).

`{batch}` stands for the batch a suite validates: the `state_rows` asset's rows for the
whole-ledger suite, the one row of the `audit_scope` asset (the view `ledger_audit_scope`) for
the batch suite. Great Expectations fills it in with `str.format` (so the SQL holds no other
braces) and aliases it itself unless the query contains a JOIN; every query that reads
`{batch}` here has a JOIN and names it. A rule that reads only the logs has no `{batch}` over
the whole ledger (`sql_files.LEDGER`); over the batch scope (`sql_files.BATCHES`) it reads
`{batch}` once, in the scope's relations.

The batch suite's rules cost what the batches in scope cost, never the history:
`rules.py`'s module doc and the files themselves say how each is read.
"""

from __future__ import annotations

from collections.abc import Sequence

from ledger_engine.audit.sql_files import BATCHES, LEDGER, audit_query
from ledger_engine.core.declarations import Table
from ledger_engine.core.invariants import MINIMUM, Invariant

# --- The assets ----------------------------------------------------------------------------


def state_rows_query(tables: Sequence[Table]) -> str:
    """The whole-ledger suite's asset: every row of every declared table as `(table_name, key,
    value)`, the table's name as declared (read from `ledger_declared_tables`), the key as text
    and the value as JSON, whatever the declared types."""
    return "\nUNION ALL\n".join(audit_query("state_rows", table=t.sql_name) for t in tables)


def audit_scope_query() -> str:
    """The batch suite's asset: the view `ledger_audit_scope` (`sql/0011_audit_marks.sql`),
    one row holding the first batch after the last passing audit's mark and the newest."""
    return audit_query("batch_expectations_audit_scope")


def bound_to_scope(query: str) -> str:
    """A rule's SQL over the batch scope with `{batch}` replaced by the parameters
    `:first_batch`, `:last_batch` (`sql/bound_scope.sql`): the direct form of the audit scope,
    for `proof.batch_verify`."""
    return query.format(batch=f"({audit_query('bound_scope')})")


# --- Over the whole ledger -----------------------------------------------------------------


def fold_query(table: Table) -> str:
    """Rows of `table` that differ from the fold of its change log, either way round."""
    return audit_query("fold", table=table.sql_name)


def change_chain_query(table: Table) -> str:
    """Change-log entries of `table` whose `before` is not the `after` of the key's entry
    before them (for a key's first entry: not NULL, as every row starts from nothing). A
    deleted, forged or altered entry breaks the chain at the next one. Reads the log only."""
    return audit_query("change_chain", table=table.sql_name)


def change_links_query() -> str:
    """Links of the change log other than the ones its order implies, either way round (a
    key's first change in a batch links to the key's change before it when that left a row):
    `sql/change_links.sql`. Reads the log only."""
    return audit_query("change_links")


def invariant_query(invariant: Invariant) -> str:
    """The rows that break a declared invariant (`ledger_engine.core.invariants`)."""
    return audit_query(f"invariant_{invariant.kind}", invariant=invariant.sql_name)


def unique_request_ids_query() -> str:
    """Request ids held by more than one executed (applied or rejected) event. An event whose
    request id is not a valid one is stored with a NULL id and takes none. Reads the event log
    only."""
    return audit_query("unique_request_ids")


def reconciliation_query(name: str) -> str:
    """One of the reconciliation's rules, `sql/recon_<name>.sql`: they read the
    reconciliation's tables and the evidence whole."""
    return audit_query(f"recon_{name}")


# --- The rules of the logs, over a scope (the whole ledger or the batches in scope) ----------


def accounted_query(scope: str = LEDGER) -> str:
    """Events of `scope` not accounted for exactly once, named by batch and position (with the
    event's outcome and request id, if the event exists) and what is wrong there
    (`sql/accounted.sql`). Over the batches in scope, one direction is left to the whole
    ledger's: an executed request id pointing into the scope without an event of its own
    (`ledger_requests` has no index by batch)."""
    return audit_query("accounted", scope)


def batch_contiguity_query(scope: str = LEDGER) -> str:
    """Batch ids missing from `ledger_batches` (they run 0, 1, 2, ... without a gap; over the
    batches in scope, from the batch before the scope on), and batches that log tables hold
    rows of but that have no batch row: `sql/contiguity.sql`. Reads the logs only."""
    return audit_query("contiguity", scope)


def batch_counts_query(scope: str = LEDGER) -> str:
    """Batch rows of `scope` whose recorded counts differ from the rows they describe: one
    finding per batch and field, with the recorded and the found count
    (`sql/batch_counts.sql`). Reads the logs only."""
    return audit_query("batch_counts", scope)


def batch_chain_query(scope: str = LEDGER) -> str:
    """Batch rows of `scope` whose `prev_hash` is not the `batch_hash` of the batch before
    (batch 0's: the genesis hash), named by batch; hashes are shown by their first 16 hex
    digits (`sql/batch_chain.sql`). Only the links are checked here: recomputing each row's
    hash from its fields is `ledger verify`'s work, in Python. Reads the batch rows only."""
    return audit_query("batch_chain", scope)


# --- Over the batches in scope alone -------------------------------------------------------
# The rules about the keys of a table written in scope share one query, which reads those
# keys' changes and rows once; so do the money invariants. Such a query returns rows (`rule`,
# `finding`), and each rule takes its own (`rows_once.UnexpectedRowsOfRuleExpectation`).
# These are the rules' names in `sql/written_keys.sql` and `sql/money_in_scope.sql`.

FOLD, CHAIN = "fold", "chain"
_KEY_TYPES = {int: "bigint", str: "text"}  # a key's SQL type: the change log keeps keys as text


def written_keys_query(table: Table) -> str:
    """Rows (`rule`, `finding`) about the keys of `table` written in scope, for three rules:
    `FOLD` (keys whose row is not the `after` of their last change), `invariant_rule` of each
    declared `minimum` invariant of `table` (keys below its minimum) and `CHAIN` (changes whose
    `before` is not the `after` of the key's change before them, looked up before the scope if
    need be): `sql/written_keys.sql`, which says how each is found at a cost of the scope."""
    key_type = _KEY_TYPES[table.key_type]
    return audit_query("written_keys", BATCHES, table=table.sql_name, key_type=key_type)


def money_in_scope_query() -> str:
    """Rows (`rule`, `finding`) of every declared `conserved` and `balanced` invariant:
    batches in scope whose net change of a table differs from the sum of its sources, and
    applied events of its streams in scope whose entries in its table do not net to zero:
    `sql/money_in_scope.sql`, which reads the invariants from `ledger_declared_invariants`."""
    return audit_query("money_in_scope", BATCHES)


def unique_in_scope_query() -> str:
    """Request ids executed in scope that more than one executed event holds (anywhere in the
    ledger): `sql/unique_request_ids_in_scope.sql`. Unlike the other rules of the logs, not
    the whole-ledger file over the scope: that one groups every executed event by id, where
    this one looks the scope's ids up in the index on request ids."""
    return audit_query("unique_request_ids_in_scope", BATCHES)


def invariant_rule(invariant: Invariant) -> str:
    """A declared invariant's rule among the rows of the query it shares in scope."""
    return f"{invariant.kind} {invariant.sql_name}"


def invariant_in_scope_query(invariant: Invariant, table: Table) -> str:
    """The shared query holding a declared invariant's findings in scope: a `minimum` is about
    the keys of its table written in scope, a money invariant about the batches in scope."""
    return written_keys_query(table) if invariant.kind == MINIMUM else money_in_scope_query()
