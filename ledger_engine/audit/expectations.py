"""The Great Expectations audit of the system of record.

`run_expectations(database_url, ledger)` keeps a Great Expectations file context per ledger
(the bank's configuration is committed in `expectations/bank/gx/`; validation results and
Data Docs in the git-ignored `expectations/<ledger>/gx/uncommitted/`), runs its checkpoint
against the ledger's schema, builds Data Docs and returns one `CheckResult` per expectation.

Everything in the context is created, or brought up to date, by every run; a run that finds it
current writes no configuration file, so the committed files stay byte-for-byte stable:

- a PostgreSQL data source whose connection string is `${LEDGER_GX_DATABASE_URL}`; the URL is
  handed to the context at run time (its runtime environment) and never written to a file;
- a query asset `state_rows` holding every row of every declared table as
  `(table_name, key, value)` (the value as JSON), with a whole-table batch definition;
- the suite `ledger_integrity`, the integrity rules of DESIGN.md ("System of record") for any
  ledger, built from its declarations: each declared table equals the fold of its change log,
  and its change log is an unbroken chain per key; every ingested event is accounted for
  exactly once (its rejection, duplicate row or executed request id, and nothing of an
  outcome it did not have); request ids are unique among executed events; batch rows are
  contiguous, their counts equal the rows they describe, and they chain by hash; and the
  invariants the application declares (`ledger_engine.core.invariants`: the bank's money is
  conserved, transfers move nothing, no balance below 0), one expectation each, evaluated by
  the SQL of `sql/invariant_*.sql` from the rule's row in `ledger_declared_invariants`; and
  the reconciliation's rules (`reconciliation_expectations`): every statement entry and
  ledger change a run considered is matched or open exactly once, no item is in two
  matches, and every match keeps its rule's tolerances (their checks' `CheckResult.suite`
  is `RECONCILIATION`, so the report shows them as a suite of their own);
- a validation definition (that suite on that batch) and the checkpoint `ledger_integrity`,
  which runs it and updates Data Docs;
- the Data Docs site `local_site`, built by `ledger_engine.audit.data_docs.OfflineSiteBuilder`:
  its pages load their scripts, styles and fonts from the site's own folder, never from a CDN,
  so they work on a machine without internet.

Most rules are `UnexpectedRowsExpectation`s: SQL returning the offending rows, so that a
failure names what is wrong (a key and both values, a pair of totals, a request id, a batch
and position, a batch and field). They run on ledgers of millions of rows, so each is
set-based: a few joins along the tables' index orders and GROUP BYs, no subquery per row.

This whole-ledger suite is the full audit's (`ledger audit --full`, the daily DAG). The same
context holds the batch audit's suite on the same data source
(`ledger_engine.audit.batch_expectations`); `run_suite` runs either, described by a
`SuiteSpec`, and touches only that suite's part of the context.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from sqlalchemy import create_engine

from ledger_engine.audit.findings import MAX_FINDINGS, CheckResult
from ledger_engine.audit.sql_files import LEDGER, audit_query
from ledger_engine.config import PROJECT_ROOT
from ledger_engine.core.declarations import StreamingLedger, Table
from ledger_engine.core.invariants import Invariant
from ledger_engine.store.database import with_session_settings
from ledger_engine.store.embedded import to_sqlalchemy_url

if TYPE_CHECKING:  # Great Expectations is imported when a run needs it: it is slow to import.
    from great_expectations.checkpoint import Checkpoint
    from great_expectations.checkpoint.checkpoint import CheckpointResult
    from great_expectations.core.batch_definition import BatchDefinition
    from great_expectations.core.expectation_suite import ExpectationSuite
    from great_expectations.core.expectation_validation_result import (
        ExpectationValidationResult,
    )
    from great_expectations.data_context import FileDataContext
    from great_expectations.expectations.expectation import Expectation

SUITE = "great_expectations"  # `CheckResult.suite` of every result of this module
# The bank's project, committed in the repository (`expectations/bank/gx`); any ledger's is
# `<LEDGER_EXPECTATIONS>/<its schema>` (`ledger_engine.tasks.audit_runs.expectations_project`).
DEFAULT_PROJECT_ROOT = PROJECT_ROOT / "expectations" / "bank"
DATA_DOCS_RESULTS_LIMIT = 100  # validation results listed on the Data Docs index page

DATASOURCE_NAME = "ledger_system_of_record"
CONNECTION_VARIABLE = "LEDGER_GX_DATABASE_URL"
ASSET_NAME = "state_rows"
BATCH_DEFINITION_NAME = "all_state_rows"
SUITE_NAME = "ledger_integrity"
VALIDATION_DEFINITION_NAME = "ledger_integrity_on_state_rows"
CHECKPOINT_NAME = "ledger_integrity"
DATA_DOCS_ACTION_NAME = "update_data_docs"
DATA_DOCS_SITE = "local_site"
RESULT_FORMAT = {
    "result_format": "COMPLETE",
    "unexpected_index_column_names": ["table_name", "key"],
}
_CHECK_NAME = "check_name"  # the key of each expectation's short name in its `meta`
# The key of an expectation's `CheckResult.suite` in its `meta`, where it is not `SUITE`: the
# reconciliation's rules run in this suite and show in the report as a suite of their own.
_AUDIT_SUITE = "audit_suite"
RECONCILIATION = "reconciliation"  # `CheckResult.suite` of the reconciliation's rules

# Serialises runs within a process: Great Expectations keeps a process-wide current context.
_RUN_LOCK = threading.Lock()


# --- The rules, as SQL ---------------------------------------------------------------------
# `{batch}` stands for the `state_rows` batch. Great Expectations fills it in with
# `str.format` (so the SQL holds no other braces) and aliases it itself unless the query
# contains a JOIN; every query that reads `{batch}` here has a JOIN and names it.
# The rules of the logs read a scope of batches, here the whole ledger (`sql_files.LEDGER`):
# the batch suite runs the same files over its scope (`sql_files.BATCHES`).


def state_rows_query(tables: Sequence[Table]) -> str:
    """The query asset: every row of every declared table as `(table_name, key, value)`, the
    table's name as declared (read from `ledger_declared_tables`), the key as text and the
    value as JSON, whatever the declared types."""
    return "\nUNION ALL\n".join(audit_query("state_rows", table=t.sql_name) for t in tables)


def fold_query(table: Table) -> str:
    """Rows of `table` that differ from the fold of its change log, either way round."""
    return audit_query("fold", table=table.sql_name)


def change_chain_query(table: Table) -> str:
    """Change-log entries of `table` whose `before` is not the `after` of the key's entry
    before them (for a key's first entry: not NULL, as every row starts from nothing). A
    deleted, forged or altered entry breaks the chain at the next one. Reads the log only, so
    it has no `{batch}`."""
    return audit_query("change_chain", table=table.sql_name)


def change_links_query() -> str:
    """Links of the change log other than the ones its order implies, either way round (a
    key's first change in a batch links to the key's change before it when that left a row):
    `sql/change_links.sql`. Reads the log only, so it has no `{batch}`."""
    return audit_query("change_links")


def invariant_query(invariant: Invariant) -> str:
    """The rows that break a declared invariant (`ledger_engine.core.invariants`)."""
    return audit_query(f"invariant_{invariant.kind}", invariant=invariant.sql_name)


def unique_request_ids_query() -> str:
    """Request ids held by more than one executed (applied or rejected) event. An event whose
    request id is not a valid one is stored with a NULL id and takes none. This rule reads the
    event log, not the batch of state rows, so it has no `{batch}`."""
    return audit_query("unique_request_ids")


def accounted_query(scope: str = LEDGER) -> str:
    """Events of `scope` (the whole ledger unless given: see `sql_files`) not accounted for
    exactly once, named by batch and position (with the event's outcome and request id, if
    the event exists) and what is wrong there (`sql/accounted.sql`). Reads the logs only, so
    over the whole ledger it has no `{batch}`."""
    return audit_query("accounted", scope)


def batch_contiguity_query(scope: str = LEDGER) -> str:
    """Batch ids missing from `ledger_batches` (they run 0, 1, 2, ... without a gap), and
    batches that log tables hold rows of but that have no batch row, over `scope` (the whole
    ledger unless given): `sql/contiguity.sql`. Reads the logs only."""
    return audit_query("contiguity", scope)


def batch_counts_query(scope: str = LEDGER) -> str:
    """Batch rows of `scope` (the whole ledger unless given) whose recorded counts differ from
    the rows they describe: one finding per batch and field, with the recorded and the found
    count (`sql/batch_counts.sql`). Reads the logs only."""
    return audit_query("batch_counts", scope)


def batch_chain_query(scope: str = LEDGER) -> str:
    """Batch rows of `scope` (the whole ledger unless given) whose `prev_hash` is not the
    `batch_hash` of the batch before (batch 0's: the genesis hash), named by batch; hashes are
    shown by their first 16 hex digits (`sql/batch_chain.sql`). Only the links are checked
    here: recomputing each row's hash from its fields is `ledger verify`'s work, in Python.
    Reads the batch rows only."""
    return audit_query("batch_chain", scope)


def rows_expectation(
    name: str, query: str, description: str, *, once: bool = False, suite: str | None = None
) -> Expectation:
    """A rule as SQL returning the offending rows, under its short check name; with `once`,
    the variant that runs its query once instead of twice (`rows_once`); with `suite`, its
    checks' `CheckResult.suite` (`SUITE` unless given)."""
    import great_expectations as gx

    from ledger_engine.audit.rows_once import UnexpectedRowsOnceExpectation

    kind = UnexpectedRowsOnceExpectation if once else gx.expectations.UnexpectedRowsExpectation
    meta = {_CHECK_NAME: name} if suite is None else {_CHECK_NAME: name, _AUDIT_SUITE: suite}
    return kind(unexpected_rows_query=query, description=description, meta=meta)


def rule_expectation(rule: str, name: str, query: str, description: str) -> Expectation:
    """One of the rules whose findings a shared query gives as rows (`rule`, `finding`),
    under its short check name (`rows_once.UnexpectedRowsOfRuleExpectation`)."""
    from ledger_engine.audit.rows_once import UnexpectedRowsOfRuleExpectation

    return UnexpectedRowsOfRuleExpectation(
        unexpected_rows_query=query, rule=rule, description=description, meta={_CHECK_NAME: name}
    )


def build_expectations(ledger: StreamingLedger) -> list[Expectation]:
    """The suite's expectations in report order, each with its short name in `meta`: the
    platform's rules for each declared table, then the application's declared invariants,
    then the rules of the logs."""
    rows = rows_expectation
    tables = list(ledger.tables.values())
    expectations = [
        rows(
            f"{t.name} equals the fold of its change log",
            fold_query(t),
            f"`{t.name}` equals the fold of its change log: each row holds the `after` of its "
            "key's last change-log entry and names that entry as its last, every key whose "
            "last entry is not a deletion has a row, and no row lacks change-log entries.",
        )
        for t in tables
    ]
    expectations += [
        rows(
            f"{t.name} change log is an unbroken chain",
            change_chain_query(t),
            f"For each key of `{t.name}`, every change-log entry's `before` is the `after` of "
            "the entry before it, and the first starts from nothing.",
        )
        for t in tables
    ]
    expectations.append(
        rows(
            "change links follow each key's chain",
            change_links_query(),
            "Each key's first change-log entry in a batch is linked to the key's entry before "
            "it when that entry left a row, and no other entry is linked: what the batch "
            "audit follows across the edge of its scope.",
        )
    )
    expectations += [
        rows(i.name, invariant_query(i), f"Declared by the application: {i.describe()}")
        for i in ledger.invariants.values()
    ]
    expectations += [
        rows(
            "every ingested event is accounted for exactly once",
            accounted_query(),
            "Each batch's events fill positions 0, 1, 2, ... without a gap; a rejected event "
            "has its rejection, a duplicate its duplicate row, an executed event with a request "
            "id its executed request id; and every rejection, duplicate row, executed request "
            "id, change-log entry and result belongs to an event of the matching outcome and "
            "names its request id.",
        ),
        rows(
            "request ids are unique among executed events",
            unique_request_ids_query(),
            "No request id belongs to more than one applied or rejected event (a rejection "
            "for a missing or invalid request id takes none).",
        ),
        rows(
            "batch rows are contiguous",
            batch_contiguity_query(),
            "Batch ids run 0, 1, 2, ... without a gap, and no log table holds rows of a batch "
            "that has no batch row.",
        ),
        rows(
            "batch counts equal the rows they describe",
            batch_counts_query(),
            "Each batch row's counts (events ingested, applied, rejected, duplicates, changes, "
            "results) equal the rows of that batch in the event log, change log and results.",
        ),
        rows(
            "batch rows chain by hash",
            batch_chain_query(),
            "Each batch row's `prev_hash` is the `batch_hash` of the batch before it; the "
            "first batch's is the genesis hash (64 zeros).",
        ),
    ]
    return expectations + reconciliation_expectations()


# --- The reconciliation's rules ------------------------------------------------------------
# Over the tables of sql/0019_reconciliation.sql and 0020_recon_resolutions.sql, written apart
# from `ledger_engine.reconcile.storage.runs` (which checks its own run before it commits): what
# every run left must hold together, whichever run left it. They read the reconciliation's
# tables and the evidence whole, so they are the full audit's; the batch suite has none of
# them (`batch_expectations`' module doc says why).


def reconciliation_expectations() -> list[Expectation]:
    """The reconciliation's rules, each query run once (`rows_once`), shown as the suite
    `RECONCILIATION`: `sql/recon_*.sql`. They hold on a ledger never reconciled."""
    rows = partial(rows_expectation, once=True, suite=RECONCILIATION)
    return [
        rows(
            "reconciled statement entries are each matched or open once",
            audit_query("recon_entries_settled"),
            "Every statement entry of a source's files up to its latest reconciliation run's "
            "`through_file` is in exactly one match or one open break, of its own source (or, "
            "written off with nothing to adjust, in neither); no match or break holds an entry "
            "that no run considered.",
        ),
        rows(
            "reconciled ledger changes are each matched or open once per source",
            audit_query("recon_changes_settled"),
            "Every ledger change a source's runs considered (every movement, up to its latest "
            "run's `through_batch`, of each account it reconciles, from the start that run "
            "read from; for a run from before runs recorded their start, the movements in its "
            "batches of the rows its statements named) is in exactly one match or one open "
            "break of that source; no match or open break of a source holds a change beyond "
            "the last batch its runs reached.",
        ),
        rows(
            "no reconciled item is in two matches",
            audit_query("recon_matched_once"),
            "No statement entry is in two matches and no ledger change in two matches of one "
            "source (a change may be matched once by each source), and every matched item is "
            "filed under its match's source.",
        ),
        rows(
            "reconciliation matches keep their rules' tolerances",
            audit_query("recon_tolerances"),
            "Each match a rule made names a rule its run recorded (`ledger_recon_run_rules`), "
            "fits the rule's strategy, records the difference of its items (statement total "
            "minus ledger total; the days between the sides' latest dates), and keeps within "
            "the rule's tolerances: an amount difference of at most max(tolerance, "
            "floor(relative x |statement total|)), a date difference within its window. A "
            "write-off's match records 0 and its items net to 0; a match made by hand is bound "
            "by no rule, but records its items' amount difference too.",
        ),
    ]


# --- Running -------------------------------------------------------------------------------


@dataclass(frozen=True)
class SuiteSpec:
    """One suite of the project's file context, on the data source `DATASOURCE_NAME`: the
    query asset it validates, its rules, its validation definition and its checkpoint (which
    updates Data Docs). Every name is the file name of what the context stores."""

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
    data_docs: str = "site"


SITE, RUN_PAGE = "site", "run_page"  # `SuiteSpec.data_docs`


def integrity_suite(ledger: StreamingLedger) -> SuiteSpec:
    """The whole-ledger suite `ledger_integrity` of `ledger`: the full audit's."""
    return SuiteSpec(
        SUITE_NAME,
        ASSET_NAME,
        state_rows_query(list(ledger.tables.values())),
        BATCH_DEFINITION_NAME,
        VALIDATION_DEFINITION_NAME,
        CHECKPOINT_NAME,
        RESULT_FORMAT,
        lambda: build_expectations(ledger),
    )


def run_expectations(
    database_url: str, ledger: StreamingLedger, project_root: Path = DEFAULT_PROJECT_ROOT
) -> list[CheckResult]:
    """Run the `ledger_integrity` checkpoint of `ledger` against `database_url` (its ledger
    URL) and build Data Docs (`run_suite` of `integrity_suite(ledger)`)."""
    return run_suite(integrity_suite(ledger), database_url, project_root)


def run_suite(
    spec: SuiteSpec, database_url: str, project_root: Path = DEFAULT_PROJECT_ROOT
) -> list[CheckResult]:
    """Run the checkpoint of the suite `spec` against `database_url` and render Data Docs.

    `database_url` is the SQLAlchemy URL of the system of record (`postgresql://...` is
    accepted too); it reaches Great Expectations at run time only. `project_root` holds the
    file context (`<project_root>/gx`), created or brought up to date first (the suite's own
    files only: another suite's are left as they are). Returns one `CheckResult` per
    expectation, in suite order: a short `name`, up to `MAX_FINDINGS` `findings` (offending
    rows) when it fails, and as `link` the Data Docs index page (`SITE`) or the run's own page
    (`RUN_PAGE`: see `SuiteSpec.data_docs`). Can be called repeatedly in one process, for the
    same database or different ones.

    Raises `sqlalchemy.exc.OperationalError` if the database cannot be reached: that is no
    finding about the data, and Great Expectations would bury it under a traceback per rule.
    """
    url = with_session_settings(to_sqlalchemy_url(database_url), spec.session_settings)
    _check_reachable(url)
    with _RUN_LOCK, _quiet():
        context = _open_context(Path(project_root), url)
        try:
            checkpoint = _ensure_checkpoint(context, spec)
            order = [
                (e.meta or {}).get(_CHECK_NAME)
                for definition in checkpoint.validation_definitions
                for e in definition.suite.expectations
            ]
            result = checkpoint.run()
            if spec.data_docs == RUN_PAGE:
                link = _build_run_pages(context, result)
            else:
                link = _data_docs_index(context)
            checks = _check_results(result, link)
            # Great Expectations returns results in its own order; report them in the suite's.
            return sorted(
                checks, key=lambda c: order.index(c.name) if c.name in order else len(order)
            )
        finally:
            _dispose_engines(context)


def _check_reachable(database_url: str) -> None:
    engine = create_engine(database_url)
    try:
        with engine.connect():
            pass
    finally:
        engine.dispose()


def _open_context(project_root: Path, database_url: str) -> FileDataContext:
    """The file context in `project_root`, with analytics and progress bars off and a bounded
    Data Docs index."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    # Registers the batch suite's expectation type, which the context's stored suites name.
    import ledger_engine.audit.rows_once  # noqa: F401

    project_root.mkdir(parents=True, exist_ok=True)
    context = gx.get_context(
        mode="file",
        project_root_dir=project_root,
        runtime_environment={CONNECTION_VARIABLE: database_url},
    )
    variables = context.variables
    changed = False
    bars = variables.progress_bars
    if variables.analytics_enabled is not False or _progress_bars_on(bars):
        variables.analytics_enabled = False
        variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
        changed = True
    sites = dict(variables.data_docs_sites or {})
    site = sites.get(DATA_DOCS_SITE) or {}
    index_builder = site.get("site_index_builder")
    if index_builder is not None and (
        index_builder.get("validation_results_limit") != DATA_DOCS_RESULTS_LIMIT
    ):
        index_builder["validation_results_limit"] = DATA_DOCS_RESULTS_LIMIT
        variables.data_docs_sites = sites
        changed = True
    if site and _offline_site(site):
        variables.data_docs_sites = sites
        changed = True
    if changed:
        variables.save()
    return context


def _offline_site(site: dict[str, Any]) -> bool:
    """Make the Data Docs site `site` (its config) one that works offline, built by
    `ledger_engine.audit.data_docs.OfflineSiteBuilder` (no asset from a CDN in any page);
    whether it changed."""
    from ledger_engine.audit.data_docs import MODULE, SITE_BUILDER

    wanted = {"class_name": SITE_BUILDER, "module_name": MODULE}
    if all(site.get(key) == value for key, value in wanted.items()):
        return False
    site.update(wanted)
    return True


def _progress_bars_on(bars: Any) -> bool:
    if bars is None:
        return True
    if isinstance(bars, Mapping):
        return bool(bars.get("globally", True) or bars.get("metric_calculations", True))
    return bool(bars.globally or bars.metric_calculations)


def _ensure_batch_definition(context: FileDataContext, spec: SuiteSpec) -> BatchDefinition:
    template = "${" + CONNECTION_VARIABLE + "}"
    query = spec.asset_query
    datasource = context.data_sources.all().get(DATASOURCE_NAME)
    if datasource is None or str(datasource.connection_string) != template:
        datasource = context.data_sources.add_or_update_postgres(
            name=DATASOURCE_NAME, connection_string=template
        )
    asset = next((a for a in datasource.assets if a.name == spec.asset_name), None)
    if asset is not None and asset.query != query:
        datasource.delete_asset(spec.asset_name)
        asset = None
    if asset is None:
        asset = datasource.add_query_asset(name=spec.asset_name, query=query)
    name = spec.batch_definition_name
    definition = next((d for d in asset.batch_definitions if d.name == name), None)
    if definition is None:
        definition = asset.add_batch_definition_whole_table(name=name)
    return definition


def _ensure_suite(context: FileDataContext, spec: SuiteSpec) -> ExpectationSuite:
    """The suite, rewritten only when its expectations changed and keeping the ids of those
    that did not (Great Expectations' `add_or_update` compares ids too, so it renews them all)."""
    import great_expectations as gx

    wanted = gx.ExpectationSuite(name=spec.suite_name, expectations=spec.build())
    current = _existing(context.suites, spec.suite_name)
    if current is None:
        return context.suites.add(wanted)
    current_ids = {_comparable(e): e.id for e in current.expectations}
    if [_comparable(e) for e in current.expectations] == [
        _comparable(e) for e in wanted.expectations
    ]:
        return current
    # Set after the suite is built: a suite refuses expectations that already have an id.
    for expectation in wanted.expectations:
        expectation.id = current_ids.get(_comparable(expectation))
    return context.suites.add_or_update(wanted)


def _comparable(expectation: Expectation) -> str:
    """An expectation's configuration without its id, as canonical text."""
    fields = expectation.dict(exclude={"id", "rendered_content"})
    return json.dumps(fields, sort_keys=True, default=str)


def _ensure_checkpoint(context: FileDataContext, spec: SuiteSpec) -> Checkpoint:
    import great_expectations as gx

    definition = _ensure_batch_definition(context, spec)
    suite = _ensure_suite(context, spec)
    name = spec.validation_definition_name
    validation = _existing(context.validation_definitions, name)
    if validation is None or validation.data.id != definition.id or validation.suite.id != suite.id:
        validation = context.validation_definitions.add_or_update(
            gx.ValidationDefinition(name=name, data=definition, suite=suite)
        )
    checkpoint = _existing(context.checkpoints, spec.checkpoint_name)
    actions = [] if spec.data_docs == RUN_PAGE else [DATA_DOCS_ACTION_NAME]
    if (
        checkpoint is None
        or [v.id for v in checkpoint.validation_definitions] != [validation.id]
        or [a.name for a in checkpoint.actions] != actions
        or checkpoint.result_format != dict(spec.result_format)
    ):
        checkpoint = context.checkpoints.add_or_update(
            gx.Checkpoint(
                name=spec.checkpoint_name,
                validation_definitions=[validation],
                actions=[gx.checkpoint.UpdateDataDocsAction(name=name) for name in actions],
                result_format=dict(spec.result_format),
            )
        )
    return checkpoint


def _existing(factory: Any, name: str) -> Any:
    """The named object of a context factory (`context.suites`, ...), or None."""
    from great_expectations.exceptions import DataContextError

    try:
        return factory.get(name)
    except (DataContextError, KeyError, ValueError):
        return None


def _build_run_pages(context: FileDataContext, result: CheckpointResult) -> str | None:
    """Render the Data Docs page of each validation of `result`; the URL of the first. The
    index and the suites' pages are left as they are (the full audit rebuilds them), except
    in a site that has no index yet: there they are built with the run's pages, so that the
    site's start page and the pages' Home and suite links exist from the first audit on."""
    pages = list(result.run_results)
    has_index = _data_docs_index(context) is not None
    context.build_data_docs(
        site_names=[DATA_DOCS_SITE],
        resource_identifiers=pages if has_index else None,
        build_index=not has_index,
    )
    for page in pages:
        for site in context.get_docs_sites_urls(
            resource_identifier=page, site_name=DATA_DOCS_SITE, only_if_exists=True
        ):
            if site.get("site_url"):
                return str(site["site_url"])
    return None


def _data_docs_index(context: FileDataContext) -> str | None:
    for site in context.get_docs_sites_urls(site_name=DATA_DOCS_SITE, only_if_exists=True):
        if site.get("site_url"):
            return str(site["site_url"])
    return None


def _dispose_engines(context: FileDataContext) -> None:
    """Close the connections the run opened: the database may be dropped right after it."""
    datasource = context.data_sources.all().get(DATASOURCE_NAME)
    engines = (
        getattr(datasource, "_engine", None),
        getattr(getattr(datasource, "_execution_engine", None), "engine", None),
    )
    for engine in engines:
        if engine is not None:
            with contextlib.suppress(Exception):
                engine.dispose()


# --- Results -------------------------------------------------------------------------------


def _check_results(checkpoint_result: CheckpointResult, link: str | None) -> list[CheckResult]:
    checks = []
    for suite_result in checkpoint_result.run_results.values():
        for result in suite_result.results:
            config = result.expectation_config
            meta = config.meta or {}
            name = meta.get(_CHECK_NAME) or config.description or config.type
            checks.append(
                CheckResult(
                    suite=str(meta.get(_AUDIT_SUITE) or SUITE),
                    name=str(name),
                    passed=bool(result.success),
                    findings=() if result.success else _findings(result),
                    link=link,
                )
            )
    return checks


def _findings(result: ExpectationValidationResult) -> tuple[str, ...]:
    """Up to `MAX_FINDINGS` lines: the offending rows (the last line says how many more there
    are, if any), or the error that stopped the expectation."""
    error = _error_message(result.exception_info)
    if error is not None:
        return (f"error: {error}",)
    details = result.result or {}
    rows = (details.get("details") or {}).get("unexpected_rows")
    if rows is None:
        rows = details.get("unexpected_index_list") or details.get("partial_unexpected_index_list")
    if rows is None:
        rows = [{"value": v} for v in details.get("partial_unexpected_list") or ()]
    total = details.get("observed_value")
    if not isinstance(total, int):
        total = details.get("unexpected_count")
    total = max(total if isinstance(total, int) else 0, len(rows))
    if not rows:
        return ("failed without naming offending rows; see Data Docs",)
    if total <= MAX_FINDINGS:
        return tuple(_render_row(row) for row in rows)
    shown = [_render_row(row) for row in rows[: MAX_FINDINGS - 1]]
    return (*shown, f"... and {total - len(shown)} more")


def _error_message(info: Any) -> str | None:
    """The first line of the error that stopped an expectation, if one did. Great Expectations
    gives one `exception_info` or, when metrics failed, one per metric."""
    if not isinstance(info, Mapping):
        return None
    infos = [info] if "raised_exception" in info else list(info.values())
    for entry in infos:
        if isinstance(entry, Mapping) and entry.get("raised_exception"):
            message = str(entry.get("exception_message") or "").strip()
            return _shorten(message.splitlines()[0] if message else "unknown error")
    return None


def _render_row(row: Any) -> str:
    if isinstance(row, Mapping):
        return _shorten(", ".join(f"{key}={_render_value(value)}" for key, value in row.items()))
    return _shorten(_render_value(row))


def _render_value(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def _shorten(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- Console noise -------------------------------------------------------------------------

_BATCH_WARNING = "unexpected_rows_query should contain the {batch} parameter"


class _WithoutBatchWarning(io.TextIOBase):
    """A stdout passing everything through except the warning Great Expectations prints each
    time it loads an `UnexpectedRowsExpectation` without `{batch}` (the rules that read only the
    logs, on purpose)."""

    def __init__(self, target: TextIO) -> None:
        self._target = target
        self._after_warning = False

    def write(self, text: str) -> int:
        dropped = _BATCH_WARNING in text or (self._after_warning and text == "\n")
        self._after_warning = _BATCH_WARNING in text
        if not dropped:
            self._target.write(text)
        return len(text)

    def flush(self) -> None:
        self._target.flush()

    # What terminal-aware writers (the CLI's progress display) ask of stdout: the real answers.
    def isatty(self) -> bool:
        return self._target.isatty()

    def fileno(self) -> int:
        return self._target.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._target, "encoding", None) or "utf-8"


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Keep Great Expectations' console noise (that warning, its info logs) out of the way."""
    gx_logger = logging.getLogger("great_expectations")
    level = gx_logger.level
    gx_logger.setLevel(max(level, logging.WARNING))
    try:
        with contextlib.redirect_stdout(_WithoutBatchWarning(sys.stdout)):
            yield
    finally:
        gx_logger.setLevel(level)
