"""Great Expectations' file context of a ledger's project, kept current for a suite.

`open_context` opens the project's context (`<project_root>/gx`) with analytics and progress
bars off, a bounded Data Docs index and the offline site builder
(`ledger_engine.audit.expectations.data_docs`); `ensure_checkpoint` creates or brings up to
date one suite's part of it (`suites.SuiteSpec`): the data source, whose connection string is
`${LEDGER_GX_DATABASE_URL}`, handed to the context at run time and never written to a file;
the suite's query asset and batch definition; the suite; its validation definition and
checkpoint. Another suite's files are left as they are, and a context found current is not
written at all, so the committed project stays byte-for-byte stable.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ledger_engine.audit.expectations.suites import DATASOURCE_NAME, RUN_PAGE, SuiteSpec

if TYPE_CHECKING:  # Great Expectations is imported when a run needs it: it is slow to import.
    from great_expectations.checkpoint import Checkpoint
    from great_expectations.checkpoint.checkpoint import CheckpointResult
    from great_expectations.core.batch_definition import BatchDefinition
    from great_expectations.core.expectation_suite import ExpectationSuite
    from great_expectations.data_context import FileDataContext
    from great_expectations.expectations.expectation import Expectation

CONNECTION_VARIABLE = "LEDGER_GX_DATABASE_URL"
DATA_DOCS_ACTION_NAME = "update_data_docs"
DATA_DOCS_SITE = "local_site"
DATA_DOCS_RESULTS_LIMIT = 100  # validation results listed on the Data Docs index page


def open_context(project_root: Path, database_url: str) -> FileDataContext:
    """The file context in `project_root`, with analytics and progress bars off and a bounded
    Data Docs index."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    # Registers the batch suite's expectation type, which the context's stored suites name.
    import ledger_engine.audit.expectations.rows_once  # noqa: F401

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
    `data_docs.OfflineSiteBuilder` (no asset from a CDN in any page); whether it changed."""
    from ledger_engine.audit.expectations.data_docs import MODULE, SITE_BUILDER

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


def ensure_checkpoint(context: FileDataContext, spec: SuiteSpec) -> Checkpoint:
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


def build_run_pages(context: FileDataContext, result: CheckpointResult) -> str | None:
    """Render the Data Docs page of each validation of `result`; the URL of the first. The
    index and the suites' pages are left as they are (the full audit rebuilds them), except
    in a site that has no index yet: there they are built with the run's pages, so that the
    site's start page and the pages' Home and suite links exist from the first audit on."""
    pages = list(result.run_results)
    has_index = data_docs_index(context) is not None
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


def data_docs_index(context: FileDataContext) -> str | None:
    for site in context.get_docs_sites_urls(site_name=DATA_DOCS_SITE, only_if_exists=True):
        if site.get("site_url"):
            return str(site["site_url"])
    return None


def dispose_engines(context: FileDataContext) -> None:
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
