"""The batch audit's Great Expectations suite, `ledger_batch_integrity`: every rule of the
whole-ledger suite (`ledger_engine.audit.expectations`), over the batches in scope only.

The scope is data: the query asset `audit_scope` is the view `ledger_audit_scope`
(`sql/0011_audit_marks.sql`), one row holding the first batch after the last passing audit's
mark and the newest batch; `{batch}` in each rule stands for that row. A rule's cost is that
of the batches in scope (index range scans of the log tables' primary keys, which start with
`batch_id`), plus one index probe per key or request id met in scope; none reads a whole
table, so the suite costs the same on a ledger of a thousand events or of millions.

What lies before the scope was proven by earlier audits; the scope's rules prove that it
continues from there: a key's first change in scope starts from the `after` of its change
before the scope, the first batch row in scope names the hash of the batch before it, and
each key written in scope holds what its last change says. A row changed behind the engine's
back outside the scope (a key no batch in scope wrote) is the full audit's to find.

`expectations/README.md` lists the rules, what each holds and what its findings name.

The reconciliation's rules (`expectations.reconciliation_expectations`) are the full audit's
alone. This suite's scope is batches, and reconciliation is no part of a batch: a pipeline
run writes none of its tables, and a reconciliation run (its own job, on its own schedule)
checks what it decides before it commits (`reconcile.storage.runs`), so this suite would prove
nothing new after a batch; and "the runs since the last audit" are not data it could bound by
an index (the marks record batches, not runs), while a run changes breaks that earlier runs
opened. Their independent check over the whole is the daily full audit's.

One direction of the accounting rule is left to the full audit: an executed request id whose
row points into the scope while no event of that id exists there (`ledger_requests` has no
index by batch, so such a row cannot be found without reading the table).

The rules of the logs (accounting, contiguity, counts, chain by hash) are the whole-ledger
suite's own SQL files over the scope's relations (`sql/scope_batches.sql`, see `sql_files`);
the rules about keys written in scope, the invariants and unique request ids have files of
their own (`sql/written_keys.sql`, `money_in_scope.sql`, `unique_request_ids_in_scope.sql`).
Each rule reads `{batch}` once, into a materialized CTE `scope`, and bounds every log table
by `(SELECT scope.first_batch FROM scope)` and `(SELECT scope.last_batch FROM scope)`: values
PostgreSQL knows before it scans, so it scans only the primary key's range (every range is
closed at both ends, and read by a bitmap scan under the session settings of
`ledger_engine.audit.session`). Lookups outside the scope (a key's earlier change, a request
id's other events, a state row) are LATERAL subqueries with LIMIT or OFFSET 0, so that the
planner cannot turn them into a join over a whole table. `ledger_engine.audit.batch_verify`
runs two of these rules directly, with the scope bound as parameters (`bound_to_scope`).

Each rule's query runs once (`rows_once`: Great Expectations' own expectation runs it twice),
and the three rules about the keys of a table written in scope (their last change, their
chain, their minimum) share one query, which reads those keys' changes and rows once
(`written_keys_query`).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from ledger_engine.audit.expectations import (
    DEFAULT_PROJECT_ROOT,
    RUN_PAGE,
    SuiteSpec,
    accounted_query,
    batch_chain_query,
    batch_contiguity_query,
    batch_counts_query,
    rows_expectation,
    rule_expectation,
    run_suite,
)
from ledger_engine.audit.findings import CheckResult
from ledger_engine.audit.session import BATCH_AUDIT_SETTINGS
from ledger_engine.audit.sql_files import BATCHES, audit_query
from ledger_engine.core.declarations import StreamingLedger, Table
from ledger_engine.core.invariants import BALANCED, CONSERVED, MINIMUM, Invariant

if TYPE_CHECKING:
    from great_expectations.expectations.expectation import Expectation


SUITE_NAME = "ledger_batch_integrity"
ASSET_NAME = "audit_scope"
ASSET_QUERY = audit_query("batch_expectations_audit_scope")
BATCH_DEFINITION_NAME = "the_audit_scope"
VALIDATION_DEFINITION_NAME = "ledger_batch_integrity_on_audit_scope"
CHECKPOINT_NAME = "ledger_batch_integrity"
RESULT_FORMAT = {"result_format": "COMPLETE"}


def bound_to_scope(query: str) -> str:
    """A rule's SQL with `{batch}` replaced by the parameters `:first_batch`, `:last_batch`
    (`sql/bound_scope.sql`): the direct form of the audit scope, for `batch_verify`."""
    return query.format(batch=f"({audit_query('bound_scope')})")


# --- The rules, as SQL ---------------------------------------------------------------------
# As in the whole-ledger suite, Great Expectations fills in `{batch}` with `str.format` and
# leaves its aliasing to queries that contain a JOIN: every rule here has one. The rules of
# the logs are the whole-ledger suite's own files over the batch scope (`sql_files.BATCHES`).

# The rules about the keys of a table written in scope, which share one query: each reads a
# key's changes in order and its row in the state table (`written_keys_query`). These names
# are the rules' names in `sql/written_keys.sql` (as `minimum_rule`'s are).
FOLD, CHAIN = "fold", "chain"
_KEY_TYPES = {int: "bigint", str: "text"}  # a key's SQL type: the change log keeps keys as text


def minimum_rule(invariant: Invariant) -> str:
    """The rule of `written_keys_query` for a declared `minimum` invariant."""
    return f"{MINIMUM} {invariant.sql_name}"


def written_keys_query(table: Table) -> str:
    """Rows (`rule`, `finding`) about the keys of `table` written in scope, for three rules
    (`rows_once.UnexpectedRowsOfRuleExpectation` gives each its own): `FOLD` (keys whose row
    is not the `after` of their last change), `minimum_rule(invariant)` for each declared
    `minimum` invariant of `table` (keys below its minimum) and `CHAIN` (changes whose
    `before` is not the `after` of the key's change before them, looked up before the scope
    if need be): `sql/written_keys.sql`, which says how each is found at a cost of the
    scope."""
    key_type = _KEY_TYPES[table.key_type]
    return audit_query("written_keys", BATCHES, table=table.sql_name, key_type=key_type)


def conservation_rule(invariant: Invariant) -> str:
    """The rule of `money_in_scope_query` for a declared `conserved` invariant."""
    return f"{CONSERVED} {invariant.sql_name}"


def balance_rule(invariant: Invariant) -> str:
    """The rule of `money_in_scope_query` for a declared `balanced` invariant."""
    return f"{BALANCED} {invariant.sql_name}"


def money_in_scope_query() -> str:
    """Rows (`rule`, `finding`) of every declared `conserved` and `balanced` invariant, which
    share one query (`rows_once.UnexpectedRowsOfRuleExpectation` gives each its own):
    `conservation_rule(invariant)` (batches in scope whose net change of the table differs
    from the sum of its sources) and `balance_rule(invariant)` (applied events of its streams
    in scope whose entries in its table do not net to zero): `sql/money_in_scope.sql`, which
    reads the invariants from `ledger_declared_invariants`."""
    return audit_query("money_in_scope", BATCHES)


def accounted_in_scope_query() -> str:
    """Events of the scope not accounted for exactly once: the whole-ledger rule over the
    scope (`expectations.accounted_query`), except executed request ids pointing into the
    scope without an event of theirs (module doc)."""
    return accounted_query(BATCHES)


def unique_in_scope_query() -> str:
    """Request ids executed in scope that more than one executed event holds (anywhere in the
    ledger): `sql/unique_request_ids_in_scope.sql`. Unlike the other rules of the logs, not
    the whole-ledger rule over the scope: that one groups every executed event by id, where
    this one looks the scope's ids up in the index on request ids."""
    return audit_query("unique_request_ids_in_scope", BATCHES)


def contiguity_in_scope_query() -> str:
    """Batch ids missing from the batch before the scope to its last batch, and batches from
    the scope's first on that log tables hold rows of but that have no batch row: the
    whole-ledger rule over the scope (`expectations.batch_contiguity_query`)."""
    return batch_contiguity_query(BATCHES)


def counts_in_scope_query() -> str:
    """Batch rows in scope whose recorded counts differ from the rows they describe: the
    whole-ledger rule over the scope (`expectations.batch_counts_query`)."""
    return batch_counts_query(BATCHES)


def chain_by_hash_in_scope_query() -> str:
    """Batch rows in scope whose `prev_hash` is not the `batch_hash` of the batch before (for
    the first in scope: the batch before the scope; for batch 0: the genesis hash): the
    whole-ledger rule over the scope (`expectations.batch_chain_query`)."""
    return batch_chain_query(BATCHES)


# --- The suite -----------------------------------------------------------------------------


def build_batch_expectations(ledger: StreamingLedger) -> list[Expectation]:
    """The batch suite's expectations in report order, each with its short name in `meta`:
    the platform's rules for each declared table, the declared invariants over the scope,
    then the rules of the logs."""
    rows = partial(rows_expectation, once=True)
    of_rule = rule_expectation
    scope = "the batches after the last passing audit (the view ledger_audit_scope)"
    tables = list(ledger.tables.values())
    invariants = list(ledger.invariants.values())
    written = {t.name: written_keys_query(t) for t in tables}
    expectations = [
        of_rule(
            FOLD,
            f"{t.name} keys written in scope hold their last change",
            written[t.name],
            f"Each key of `{t.name}` written in {scope} holds the `after` of its last "
            "change-log entry, or has no row if that is NULL.",
        )
        for t in tables
    ]
    expectations += [
        of_rule(
            CHAIN,
            f"{t.name} change log in scope continues its chain",
            written[t.name],
            f"Each change-log entry of `{t.name}` in {scope} starts from the `after` of the "
            "key's entry before it, found before the scope if need be; a key's first entry "
            "ever starts from nothing.",
        )
        for t in tables
    ]
    money = money_in_scope_query()
    for invariant in invariants:
        if invariant.kind == MINIMUM:
            rule, query = minimum_rule(invariant), written[invariant.table]
        else:
            rule = (conservation_rule if invariant.kind == CONSERVED else balance_rule)(invariant)
            query = money
        expectations.append(
            of_rule(
                rule,
                f"{invariant.name}, in scope",
                query,
                f"Declared by the application, over {scope} (a conserved total batch by "
                f"batch, a minimum over the keys written): {invariant.describe()}",
            )
        )
    expectations += [
        rows(
            "every event in scope is accounted for exactly once",
            accounted_in_scope_query(),
            f"In {scope}, each batch's events fill positions 0, 1, 2, ... without a gap; a "
            "rejected event has its rejection, a duplicate its duplicate row, an executed "
            "event with a request id its executed request id, pointing back to it; every "
            "rejection, duplicate row, change-log entry and result belongs to an event of the "
            "matching outcome and names its request id.",
        ),
        rows(
            "request ids in scope are unique among executed events",
            unique_in_scope_query(),
            f"No request id executed in {scope} belongs to another applied or rejected event.",
        ),
        rows(
            "batch rows in scope are contiguous",
            contiguity_in_scope_query(),
            "Batch ids run on without a gap from the batch before the scope to the newest, and "
            "no log table holds rows of a batch from the scope on that has no batch row.",
        ),
        rows(
            "batch counts in scope equal the rows they describe",
            counts_in_scope_query(),
            f"Each batch row of {scope} has counts equal to the rows of its batch in the event "
            "log, change log and results.",
        ),
        rows(
            "batch rows in scope chain by hash",
            chain_by_hash_in_scope_query(),
            f"Each batch row of {scope} names the `batch_hash` of the batch before it; the "
            "first batch's is the genesis hash.",
        ),
    ]
    return expectations


def batch_integrity_suite(ledger: StreamingLedger) -> SuiteSpec:
    """The batch audit's suite of `ledger` on the `audit_scope` asset of the same data source."""
    return SuiteSpec(
        SUITE_NAME,
        ASSET_NAME,
        ASSET_QUERY,
        BATCH_DEFINITION_NAME,
        VALIDATION_DEFINITION_NAME,
        CHECKPOINT_NAME,
        RESULT_FORMAT,
        lambda: build_batch_expectations(ledger),
        BATCH_AUDIT_SETTINGS,
        RUN_PAGE,
    )


def run_batch_expectations(
    database_url: str, ledger: StreamingLedger, project_root: Path = DEFAULT_PROJECT_ROOT
) -> list[CheckResult]:
    """Run the `ledger_batch_integrity` checkpoint against `database_url` and render its Data
    Docs page (see `expectations.run_suite`): the run's page only, which its checks link to.
    The index and the suites' pages are the full audit's to rebuild: rebuilding the index
    reads the latest hundred validation results, a second of every batch audit."""
    return run_suite(batch_integrity_suite(ledger), database_url, project_root)
