"""The Great Expectations audit of the system of record.

`run_expectations(database_url)` keeps a Great Expectations file context in `expectations/`
(configuration to commit in `expectations/gx/`, results and Data Docs in the git-ignored
`expectations/gx/uncommitted/`), runs its checkpoint against the given PostgreSQL database,
builds Data Docs and returns one `CheckResult` per expectation.

What the context holds, all created or brought up to date on every run (a run that changes
nothing rewrites nothing, so the committed files stay stable):

- a PostgreSQL data source whose connection string is `${LEDGER_GX_DATABASE_URL}`: the URL is
  handed to the context at run time (its runtime environment), never written to a file;
- a query asset `state_rows`, every row of every state table as `(table_name, key, value)`, and
  a whole-table batch definition over it;
- the suite `ledger_integrity` (the integrity rules of DESIGN.md, "System of record"):
  each state table equals the fold of its change log; money is conserved (total balances equal
  total applied deposits, for accounts and for the asset ledger); request ids are unique among
  executed events; no balance and no asset amount below the bank app's minimum (0);
- a validation definition (the suite on that batch) and the checkpoint `ledger_integrity`,
  which runs it and updates Data Docs.

Most rules are `UnexpectedRowsExpectation`s: SQL that returns the offending rows, so that a
failure names what is wrong (a key, a pair of totals, a request id).
"""

from __future__ import annotations

import contextlib
import io
import logging
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger_engine.audit.findings import CheckResult
from ledger_engine.config import PROJECT_ROOT

SUITE = "great_expectations"  # CheckResult.suite of every result of this module
DEFAULT_PROJECT_ROOT = PROJECT_ROOT / "expectations"
MAX_FINDINGS = 10

DATASOURCE_NAME = "ledger_system_of_record"
CONNECTION_VARIABLE = "LEDGER_GX_DATABASE_URL"
ASSET_NAME = "state_rows"
BATCH_DEFINITION_NAME = "all_state_rows"
SUITE_NAME = "ledger_integrity"
VALIDATION_DEFINITION_NAME = "ledger_integrity_on_state_rows"
CHECKPOINT_NAME = "ledger_integrity"
DATA_DOCS_ACTION_NAME = "update_data_docs"
_CHECK_NAME_KEY = "check_name"  # where each expectation's short name lives in its `meta`

# Serialises runs within one process: Great Expectations keeps a process-wide "current context".
_RUN_LOCK = threading.Lock()


@dataclass(frozen=True)
class StateTable:
    """A state table of the bank app and the rules its values follow."""

    name: str
    label: str  # what one value is, in words
    deposit_field: str  # payload field of a deposit that credits this table
    minimum: int  # the lowest value the app ever leaves in a row


STATE_TABLES: tuple[StateTable, ...] = (
    StateTable("accounts", "account balance", "amount", 0),
    StateTable("asset_ledger", "asset amount", "asset_amount", 0),
)

# The rejection the engine records for an event whose request id is missing or not a non-empty
# string (`ledger_engine.serial.admit`). Such a request id is not taken: the same text may be
# executed under a valid id elsewhere, so these rejections do not count for uniqueness.
_INVALID_REQUEST_ID = ("invalid_event", "request_id must be a non-empty string")


def _state_rows_query(tables: Sequence[StateTable]) -> str:
    return "\nUNION ALL\n".join(
        f"SELECT '{t.name}' AS table_name, CAST(key AS text) AS key, value FROM {t.name}"
        for t in tables
    )


# --- The expectations ----------------------------------------------------------------------
# `{batch}` is the `state_rows` batch. Great Expectations formats each query with
# `str.format`, so the SQL carries no other braces; and it aliases `{batch}` itself unless the
# query contains a JOIN, in which case the query names it.


def _fold_query(table: StateTable) -> str:
    return f"""
WITH last_change AS (
    SELECT DISTINCT ON (c.key) c.key, c.after, c.batch_id, c.position
    FROM ledger_change_log AS c
    WHERE c.table_name = '{table.name}'
    ORDER BY c.key, c.batch_id DESC, c.position DESC, c.seq DESC
),
state AS (
    SELECT s.key, s.value FROM {{batch}} AS s WHERE s.table_name = '{table.name}'
)
SELECT COALESCE(state.key, last_change.key) AS key,
       state.value AS state_value,
       last_change.after AS change_log_value,
       last_change.batch_id AS last_batch_id,
       last_change.position AS last_position,
       CASE
           WHEN last_change.key IS NULL THEN 'row has no change-log entry'
           WHEN state.key IS NULL THEN 'change log ends with a value but the row is missing'
           WHEN last_change.after IS NULL THEN 'change log deleted the row but it exists'
           ELSE 'value differs from the change log'
       END AS problem
FROM state
FULL OUTER JOIN last_change ON last_change.key = state.key
WHERE last_change.key IS NULL
   OR (state.key IS NULL AND last_change.after IS NOT NULL)
   OR (state.key IS NOT NULL AND to_jsonb(state.value) IS DISTINCT FROM last_change.after)
ORDER BY 1
"""


def _conservation_query(table: StateTable) -> str:
    return f"""
SELECT '{table.name}' AS table_name,
       state.total AS total_{table.name},
       deposits.total AS total_deposited_{table.deposit_field},
       state.total - deposits.total AS difference
FROM (
    SELECT COALESCE(SUM(s.value), 0) AS total FROM {{batch}} AS s
    WHERE s.table_name = '{table.name}'
) AS state
CROSS JOIN (
    SELECT COALESCE(SUM(CAST(e.payload ->> '{table.deposit_field}' AS numeric)), 0) AS total
    FROM ledger_events AS e
    WHERE e.stream = 'deposits' AND e.outcome = 'applied'
) AS deposits
WHERE state.total <> deposits.total
"""


def _unique_request_ids_query() -> str:
    reason, detail = _INVALID_REQUEST_ID
    return f"""
WITH executed AS (
    SELECT e.request_id, e.batch_id, e.position, e.outcome
    FROM ledger_events AS e
    LEFT JOIN ledger_rejections AS r USING (batch_id, position)
    WHERE e.outcome IN ('applied', 'rejected')
      AND e.request_id IS NOT NULL
      AND NOT (e.outcome = 'rejected' AND r.reason = '{reason}' AND r.detail = '{detail}')
)
SELECT request_id,
       COUNT(*) AS executions,
       string_agg(outcome || ' in batch ' || batch_id || ' at ' || position, '; '
                  ORDER BY batch_id, position) AS events
FROM executed
GROUP BY request_id
HAVING COUNT(*) > 1
ORDER BY request_id
"""


def _build_expectations() -> list[Any]:
    """The suite's expectations, in report order; each carries its short name in `meta`."""
    import great_expectations as gx
    from great_expectations.expectations.row_conditions import Column

    expectations: list[Any] = []
    for table in STATE_TABLES:
        expectations.append(
            gx.expectations.UnexpectedRowsExpectation(
                unexpected_rows_query=_fold_query(table),
                description=(
                    f"State of `{table.name}` equals the fold of its change log: for every key, "
                    "the row holds the `after` of the key's last change-log entry (none if that "
                    "entry deleted it), and no row exists without a change-log entry."
                ),
                meta={_CHECK_NAME_KEY: f"{table.name} equals the fold of its change log"},
            )
        )
    for table in STATE_TABLES:
        expectations.append(
            gx.expectations.UnexpectedRowsExpectation(
                unexpected_rows_query=_conservation_query(table),
                description=(
                    f"Money is conserved: the sum of `{table.name}` equals the sum of "
                    f"`{table.deposit_field}` over applied deposits."
                ),
                meta={_CHECK_NAME_KEY: f"{table.name} total equals applied deposits"},
            )
        )
    expectations.append(
        gx.expectations.UnexpectedRowsExpectation(
            unexpected_rows_query=_unique_request_ids_query(),
            description=(
                "Request ids are unique among executed events: no request id belongs to more "
                "than one applied or rejected event (rejections for a missing or invalid "
                "request id do not take one)."
            ),
            meta={_CHECK_NAME_KEY: "request ids are unique among executed events"},
        )
    )
    for table in STATE_TABLES:
        expectations.append(
            gx.expectations.ExpectColumnValuesToBeBetween(
                column="value",
                min_value=table.minimum,
                row_condition=Column("table_name") == table.name,
                description=(
                    f"No {table.label} below {table.minimum}, the lowest the bank app allows."
                ),
                meta={_CHECK_NAME_KEY: f"no {table.label} below {table.minimum}"},
            )
        )
    return expectations


# --- Running -------------------------------------------------------------------------------


def run_expectations(
    database_url: str, project_root: Path = DEFAULT_PROJECT_ROOT
) -> list[CheckResult]:
    """Run the `ledger_integrity` checkpoint against `database_url` and build Data Docs.

    `database_url` is a SQLAlchemy URL of the system of record (`postgresql+psycopg2://...`);
    it is given to Great Expectations at run time and never written to the context's files.
    `project_root` holds the file context (`<project_root>/gx`), created or brought up to date
    first. Returns one `CheckResult` per expectation, in suite order: `name` is a short
    sentence, `findings` up to `MAX_FINDINGS` offending rows, `link` the Data Docs index page.
    Safe to call repeatedly in one process, for one database or several.
    """
    with _RUN_LOCK, _quiet():
        context = _open_context(Path(project_root), database_url)
        try:
            checkpoint = _ensure_checkpoint(context)
            result = checkpoint.run()
            link = _data_docs_index(context)
            return _check_results(result, link)
        finally:
            _dispose_engines(context)


def _open_context(project_root: Path, database_url: str) -> Any:
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    project_root.mkdir(parents=True, exist_ok=True)
    context = gx.get_context(
        mode="file",
        project_root_dir=project_root,
        runtime_environment={CONNECTION_VARIABLE: database_url},
    )
    variables = context.variables
    bars = variables.progress_bars
    if variables.analytics_enabled is not False or bars is None or bars.globally:
        variables.analytics_enabled = False
        variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
        variables.save()
    return context


def _ensure_batch_definition(context: Any) -> Any:
    template = "${" + CONNECTION_VARIABLE + "}"
    query = _state_rows_query(STATE_TABLES)
    datasource = context.data_sources.all().get(DATASOURCE_NAME)
    if datasource is None or str(datasource.connection_string) != template:
        datasource = context.data_sources.add_or_update_postgres(
            name=DATASOURCE_NAME, connection_string=template
        )
    asset = next((a for a in datasource.assets if a.name == ASSET_NAME), None)
    if asset is not None and asset.query != query:
        datasource.delete_asset(ASSET_NAME)
        asset = None
    if asset is None:
        asset = datasource.add_query_asset(name=ASSET_NAME, query=query)
    definition = next(
        (d for d in asset.batch_definitions if d.name == BATCH_DEFINITION_NAME), None
    )
    if definition is None:
        definition = asset.add_batch_definition_whole_table(name=BATCH_DEFINITION_NAME)
    return definition


def _ensure_suite(context: Any) -> Any:
    import great_expectations as gx

    wanted = gx.ExpectationSuite(name=SUITE_NAME, expectations=_build_expectations())
    existing = context.suites.all()
    current = next((s for s in existing if s.name == SUITE_NAME), None)
    if current is not None and _same_expectations(current.expectations, wanted.expectations):
        return current
    return context.suites.add_or_update(wanted)


def _same_expectations(current: Sequence[Any], wanted: Sequence[Any]) -> bool:
    return len(current) == len(wanted) and all(
        c == w and c.meta == w.meta and c.description == w.description
        for c, w in zip(current, wanted, strict=True)
    )


def _ensure_checkpoint(context: Any) -> Any:
    import great_expectations as gx

    definition = _ensure_batch_definition(context)
    suite = _ensure_suite(context)
    validation = _existing(context.validation_definitions, VALIDATION_DEFINITION_NAME)
    if (
        validation is None
        or validation.data.id != definition.id
        or validation.suite.id != suite.id
    ):
        validation = context.validation_definitions.add_or_update(
            gx.ValidationDefinition(name=VALIDATION_DEFINITION_NAME, data=definition, suite=suite)
        )
    checkpoint = _existing(context.checkpoints, CHECKPOINT_NAME)
    result_format = {
        "result_format": "COMPLETE",
        "unexpected_index_column_names": ["table_name", "key"],
    }
    if (
        checkpoint is None
        or [v.id for v in checkpoint.validation_definitions] != [validation.id]
        or [a.name for a in checkpoint.actions] != [DATA_DOCS_ACTION_NAME]
        or checkpoint.result_format != result_format
    ):
        checkpoint = context.checkpoints.add_or_update(
            gx.Checkpoint(
                name=CHECKPOINT_NAME,
                validation_definitions=[validation],
                actions=[gx.checkpoint.UpdateDataDocsAction(name=DATA_DOCS_ACTION_NAME)],
                result_format=result_format,
            )
        )
    return checkpoint


def _existing(factory: Any, name: str) -> Any:
    from great_expectations.exceptions import DataContextError

    try:
        return factory.get(name)
    except (DataContextError, KeyError, ValueError):
        return None


def _data_docs_index(context: Any) -> str | None:
    for site in context.get_docs_sites_urls(only_if_exists=True):
        url = site.get("site_url")
        if url:
            return str(url)
    return None


def _dispose_engines(context: Any) -> None:
    """Close the connections the run opened (the database may be dropped right after)."""
    datasource = context.data_sources.all().get(DATASOURCE_NAME)
    if datasource is None:
        return
    for engine in (
        getattr(datasource, "_engine", None),
        getattr(getattr(datasource, "_execution_engine", None), "engine", None),
    ):
        if engine is not None:
            with contextlib.suppress(Exception):
                engine.dispose()


# --- Results -------------------------------------------------------------------------------


def _check_results(checkpoint_result: Any, link: str | None) -> list[CheckResult]:
    checks = []
    for validation in checkpoint_result.run_results.values():
        for result in validation.results:
            config = result.expectation_config
            meta = config.meta or {}
            name = meta.get(_CHECK_NAME_KEY) or config.description or config.type
            checks.append(
                CheckResult(
                    suite=SUITE,
                    name=name,
                    passed=bool(result.success),
                    findings=() if result.success else _findings(result),
                    link=link,
                )
            )
    return checks


def _findings(result: Any) -> tuple[str, ...]:
    info = result.exception_info or {}
    if info.get("raised_exception"):
        message = str(info.get("exception_message") or "unknown error").strip()
        return (f"error: {_shorten(message.splitlines()[0] if message else message)}",)
    details = result.result or {}
    rows = (details.get("details") or {}).get("unexpected_rows")
    if rows is None:
        rows = details.get("unexpected_index_list") or details.get("partial_unexpected_index_list")
    if rows is None:
        rows = [{"value": v} for v in details.get("partial_unexpected_list") or ()]
    total = details.get("observed_value")
    if not isinstance(total, int):
        total = details.get("unexpected_count", len(rows))
    rendered = [_render_row(row) for row in rows]
    if total > len(rendered) or len(rendered) > MAX_FINDINGS:
        shown = rendered[: MAX_FINDINGS - 1]
        return (*shown, f"... and {total - len(shown)} more (see Data Docs)")
    return tuple(rendered) or ("failed without offending rows",)


def _render_row(row: Any) -> str:
    if isinstance(row, Mapping):
        text = ", ".join(f"{key}={_render_value(value)}" for key, value in row.items())
    else:
        text = _render_value(row)
    return _shorten(text)


def _render_value(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def _shorten(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Keep Great Expectations' console output (prints, progress, info logs) out of the way."""
    gx_logger = logging.getLogger("great_expectations")
    level = gx_logger.level
    gx_logger.setLevel(max(level, logging.WARNING))
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        gx_logger.setLevel(level)
