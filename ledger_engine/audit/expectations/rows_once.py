"""A Great Expectations rule as SQL returning the offending rows, run once.

Great Expectations' `UnexpectedRowsExpectation` depends on two metrics, the query's rows and
their count, and computes each with a query of its own: every rule runs twice, once wrapped in
`SELECT COUNT(*) FROM (...)`. On the batch audit's rules, which read a batch's 10^5 events and
3x10^5 change-log entries each, that second run was half of the suite's time.

`UnexpectedRowsOnceExpectation` is the same expectation (same query, same `{batch}`, success
when no row comes back, same result: `observed_value` the number of rows, `details` the first
`MAX_RESULT_RECORDS` of them, Data Docs rendered alike) computed from one metric,
`unexpected_rows_query.rows_and_count`, that runs the query once and counts the rows it
returns. `UnexpectedRowsOfRuleExpectation` goes one step further for rules about the same
rows: several expectations share one query returning rows (`rule`, `finding`), each taking the
findings of its rule, and Great Expectations runs the query once for all of them.

Importing this module registers them with Great Expectations; a context whose suites hold
them must be opened after that import (`context.open_context` does it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from great_expectations.compatibility.sqlalchemy import sqlalchemy as sa
from great_expectations.constants import MAX_RESULT_RECORDS
from great_expectations.core.metric_domain_types import MetricDomainTypes
from great_expectations.execution_engine import SqlAlchemyExecutionEngine
from great_expectations.expectations.core.unexpected_rows_expectation import (
    UnexpectedRowsExpectation,
)
from great_expectations.expectations.metrics.metric_provider import metric_value
from great_expectations.expectations.metrics.query_metric_provider import QueryMetricProvider

if TYPE_CHECKING:
    from great_expectations.core import ExpectationValidationResult
    from great_expectations.execution_engine import ExecutionEngine

METRIC_NAME = "unexpected_rows_query.rows_and_count"
ROWS = "rows"  # the first MAX_RESULT_RECORDS rows, as dicts
COUNT = "count"  # how many rows the query returned


def _run_query(
    provider: type[QueryMetricProvider],
    execution_engine: SqlAlchemyExecutionEngine,
    metric_domain_kwargs: dict,
    metric_value_kwargs: dict,
) -> Any:
    """Run a metric's `unexpected_rows_query` with `{batch}` filled in, as Great Expectations'
    own query metrics do; the SQLAlchemy result."""
    batch_selectable, _, _ = execution_engine.get_compute_domain(
        metric_domain_kwargs, domain_type=MetricDomainTypes.TABLE
    )
    query = provider._get_substituted_batch_subquery_from_query_and_batch_selectable(
        query=provider._get_query_from_metric_value_kwargs(metric_value_kwargs),
        batch_selectable=batch_selectable,
        execution_engine=execution_engine,
    )
    return execution_engine.execute_query(sa.text(query))


def _parent_metrics(found: dict[str, Any]) -> dict[str, Any]:
    """`UnexpectedRowsExpectation`'s two metrics, from the rows and count of one query run
    (it would have computed them with two)."""
    return {
        "unexpected_rows_query.table": found[ROWS],
        "unexpected_rows_query.row_count": found[COUNT],
    }


class _QueryRowsMetric(QueryMetricProvider):
    """A metric computed from one execution of an expectation's `unexpected_rows_query`: a
    subclass names it (`metric_name`, which registers it) and says what it keeps of the rows
    (`_collect`)."""

    value_keys = ("unexpected_rows_query",)
    query_param_name: ClassVar[str] = "unexpected_rows_query"

    @classmethod
    def _collect(cls, result: Any) -> Any:
        raise NotImplementedError

    @metric_value(engine=SqlAlchemyExecutionEngine)
    def _sqlalchemy(
        cls,
        execution_engine: SqlAlchemyExecutionEngine,
        metric_domain_kwargs: dict,
        metric_value_kwargs: dict,
        metrics: dict[str, Any],
        runtime_configuration: dict,
    ) -> Any:
        result = _run_query(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs)
        return cls._collect(result)


class UnexpectedRowsQueryRowsAndCount(_QueryRowsMetric):
    """The rows of an unexpected-rows query (the first `MAX_RESULT_RECORDS`) and their count,
    from one execution of the query."""

    metric_name = METRIC_NAME

    @classmethod
    def _collect(cls, result: Any) -> dict[str, Any]:
        shown = result.fetchmany(MAX_RESULT_RECORDS)
        # The rest is counted, not kept: a rule's rows are its findings, few when all is well.
        count = len(shown) + sum(1 for _ in result)
        return {ROWS: [row._asdict() for row in shown], COUNT: count}


class UnexpectedRowsOnceExpectation(UnexpectedRowsExpectation):
    """`UnexpectedRowsExpectation` with its query run once (see the module docstring)."""

    metric_dependencies: ClassVar[tuple[str, ...]] = (METRIC_NAME,)

    def _found(self, metrics: dict) -> dict[str, Any]:
        """This expectation's rows and their count, from its metric."""
        return metrics[METRIC_NAME]

    def _validate(
        self,
        metrics: dict,
        runtime_configuration: dict | None = None,
        execution_engine: ExecutionEngine | None = None,
    ) -> ExpectationValidationResult | dict:
        found = self._found(metrics)
        return super()._validate(_parent_metrics(found), runtime_configuration, execution_engine)


# --- Several rules' rows from one query -------------------------------------------------------

SHARED_METRIC_NAME = "unexpected_rows_query.rows_by_rule"
RULE_COLUMN = "rule"  # which rule a row of a shared query is about
FINDING_COLUMN = "finding"  # the row itself, a JSON object (its keys in the query's order)


class UnexpectedRowsQueryRowsByRule(_QueryRowsMetric):
    """For a query of rows (`rule`, `finding`): per rule, its findings (the first
    `MAX_RESULT_RECORDS`, as dicts) and their count, from one execution of the query."""

    metric_name = SHARED_METRIC_NAME

    @classmethod
    def _collect(cls, result: Any) -> dict[str, dict[str, Any]]:
        by_rule: dict[str, dict[str, Any]] = {}
        for row in result.mappings():
            found = by_rule.setdefault(row[RULE_COLUMN], {ROWS: [], COUNT: 0})
            if found[COUNT] < MAX_RESULT_RECORDS:
                found[ROWS].append(dict(row[FINDING_COLUMN]))
            found[COUNT] += 1
        return by_rule


class UnexpectedRowsOfRuleExpectation(UnexpectedRowsOnceExpectation):
    """`UnexpectedRowsOnceExpectation` for one of several rules that share a query: its
    unexpected rows are the findings of the rows whose `rule` is this expectation's `rule`.

    Great Expectations computes a metric once per validation for all the expectations that
    need it with the same arguments, so the shared query runs once for all its rules: rules
    about the same rows (the keys a batch wrote, say) read and join them once."""

    rule: str
    metric_dependencies: ClassVar[tuple[str, ...]] = (SHARED_METRIC_NAME,)
    success_keys: ClassVar[tuple[str, ...]] = ("unexpected_rows_query", "rule")

    def _found(self, metrics: dict) -> dict[str, Any]:
        return metrics[SHARED_METRIC_NAME].get(self.rule, {ROWS: [], COUNT: 0})
