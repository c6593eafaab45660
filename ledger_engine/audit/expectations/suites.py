"""The project's two suites, as Great Expectations stores them: each on its query asset of the
data source `DATASOURCE_NAME`, with its expectations (from `rules.RULES`), its validation
definition and its checkpoint.

- `ledger_integrity` (`integrity_suite`), the full audit's: every rule over the whole ledger,
  on the asset `state_rows` (every row of every declared table as `(table_name, key, value)`);
  its checkpoint updates the whole Data Docs site.
- `ledger_batch_integrity` (`batch_integrity_suite`), the batch audit's after every pipeline
  run: the rules over the batches after the last passing audit, on the asset `audit_scope` (the
  view `ledger_audit_scope`, one row: the scope's first and last batch), under the batch
  audit's session settings (`ledger_engine.audit.session`); its run renders its own Data Docs
  page only.

Each expectation carries its check's short name in its `meta` (`CHECK_NAME`), and, for a
rule reported as a suite of its own, that suite (`AUDIT_SUITE`): `results` reads them back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ledger_engine.audit.expectations import queries
from ledger_engine.audit.expectations.rules import RECONCILIATION, RULES, SUITE, Check, checks
from ledger_engine.audit.session import BATCH_AUDIT_SETTINGS
from ledger_engine.audit.sql_files import BATCHES, LEDGER
from ledger_engine.core.declarations import StreamingLedger

if TYPE_CHECKING:  # Great Expectations is imported when a run needs it: it is slow to import.
    from great_expectations.expectations.expectation import Expectation

DATASOURCE_NAME = "ledger_system_of_record"
CHECK_NAME = "check_name"  # the key of each expectation's short name in its `meta`
AUDIT_SUITE = "audit_suite"  # the key of its `CheckResult.suite` in its `meta`, if not `SUITE`
SITE, RUN_PAGE = "site", "run_page"  # `SuiteSpec.data_docs`


@dataclass(frozen=True)
class SuiteSpec:
    """One suite of the project's file context, on the data source `DATASOURCE_NAME`: the
    query asset it validates, its rules, its validation definition and its checkpoint. Every
    name is the file name of what the context stores."""

    suite_name: str
    asset_name: str
    asset_query: str
    batch_definition_name: str
    validation_definition_name: str
    checkpoint_name: str
    result_format: Mapping[str, Any]
    build: Callable[[], list[Expectation]]  # the suite's expectations in report order
    # PostgreSQL settings of the suite's sessions (name -> value), given as the connection's
    # `options`: the run's URL carries them, no stored configuration does.
    session_settings: Mapping[str, str] = field(default_factory=dict)
    # Data Docs after each run: the whole site through the checkpoint's action (`SITE`: the
    # run's page, the suite's page and the index, which reads the latest validation results),
    # or only the run's own page (`RUN_PAGE`), which is what its checks link to.
    data_docs: str = SITE


def integrity_suite(ledger: StreamingLedger) -> SuiteSpec:
    """The whole-ledger suite `ledger_integrity` of `ledger`: the full audit's."""
    return SuiteSpec(
        "ledger_integrity",
        "state_rows",
        queries.state_rows_query(list(ledger.tables.values())),
        "all_state_rows",
        "ledger_integrity_on_state_rows",
        "ledger_integrity",
        {"result_format": "COMPLETE", "unexpected_index_column_names": ["table_name", "key"]},
        lambda: expectations(checks(ledger, LEDGER)),
    )


def batch_integrity_suite(ledger: StreamingLedger) -> SuiteSpec:
    """The batch audit's suite `ledger_batch_integrity` of `ledger`, on the `audit_scope`
    asset of the same data source."""
    return SuiteSpec(
        "ledger_batch_integrity",
        "audit_scope",
        queries.audit_scope_query(),
        "the_audit_scope",
        "ledger_batch_integrity_on_audit_scope",
        "ledger_batch_integrity",
        {"result_format": "COMPLETE"},
        lambda: expectations(checks(ledger, BATCHES)),
        BATCH_AUDIT_SETTINGS,
        RUN_PAGE,
    )


def reconciliation_expectations(ledger: StreamingLedger) -> list[Expectation]:
    """The whole-ledger suite's reconciliation rules alone, as it runs them."""
    rules = tuple(rule for rule in RULES if rule.suite == RECONCILIATION)
    return expectations(checks(ledger, LEDGER, rules))


def expectations(found: list[Check]) -> list[Expectation]:
    """Great Expectations' expectations of `found`, in their order."""
    return [expectation(check) for check in found]


def expectation(check: Check) -> Expectation:
    """A check as Great Expectations' expectation: SQL returning the offending rows (run twice,
    or once: `rows_once`), or one rule's rows of a shared query (`rows_once`)."""
    import great_expectations as gx

    from ledger_engine.audit.expectations import rows_once

    meta = {CHECK_NAME: check.name}
    if check.suite != SUITE:
        meta[AUDIT_SUITE] = check.suite
    query, rule = check.rows.query, check.rows.rule
    if rule is not None:
        assert check.once, check.name  # a shared query runs once, for all its rules
        return rows_once.UnexpectedRowsOfRuleExpectation(
            unexpected_rows_query=query, rule=rule, description=check.holds, meta=meta
        )
    kind = (
        rows_once.UnexpectedRowsOnceExpectation
        if check.once
        else gx.expectations.UnexpectedRowsExpectation
    )
    return kind(unexpected_rows_query=query, description=check.holds, meta=meta)
