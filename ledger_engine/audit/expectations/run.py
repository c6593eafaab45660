"""Running a suite of the Great Expectations audit against the system of record.

`run_expectations(database_url, ledger)` runs the full audit's suite `ledger_integrity`,
`run_batch_expectations` the batch audit's `ledger_batch_integrity` (`suites`), each in the
file context of the ledger's project (the bank's is committed in `expectations/bank/gx/`; any
ledger's validation results and Data Docs are in its git-ignored `gx/uncommitted/`): the
context is brought up to date for the suite (`context`), its checkpoint runs, Data Docs are
rendered, and each expectation's result comes back as a `CheckResult` (`results`), in the
suite's order.
"""

from __future__ import annotations

import threading
from pathlib import Path

from sqlalchemy import create_engine

from ledger_engine.audit.expectations.console import quiet
from ledger_engine.audit.expectations.context import (
    build_run_pages,
    data_docs_index,
    dispose_engines,
    ensure_checkpoint,
    open_context,
)
from ledger_engine.audit.expectations.results import check_results
from ledger_engine.audit.expectations.suites import (
    CHECK_NAME,
    RUN_PAGE,
    SuiteSpec,
    batch_integrity_suite,
    integrity_suite,
)
from ledger_engine.audit.findings import CheckResult
from ledger_engine.config import PROJECT_ROOT
from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.store.database import with_session_settings
from ledger_engine.store.embedded import to_sqlalchemy_url

# The bank's project, committed in the repository (`expectations/bank/gx`); any ledger's is
# `<LEDGER_EXPECTATIONS>/<its schema>` (`ledger_engine.tasks.audit_runs.expectations_project`).
DEFAULT_PROJECT_ROOT = PROJECT_ROOT / "expectations" / "bank"

# Serialises runs within a process: Great Expectations keeps a process-wide current context.
_RUN_LOCK = threading.Lock()


def run_expectations(
    database_url: str, ledger: StreamingLedger, project_root: Path = DEFAULT_PROJECT_ROOT
) -> list[CheckResult]:
    """Run the `ledger_integrity` checkpoint of `ledger` against `database_url` (its ledger
    URL) and build Data Docs (`run_suite` of `integrity_suite(ledger)`)."""
    return run_suite(integrity_suite(ledger), database_url, project_root)


def run_batch_expectations(
    database_url: str, ledger: StreamingLedger, project_root: Path = DEFAULT_PROJECT_ROOT
) -> list[CheckResult]:
    """Run the `ledger_batch_integrity` checkpoint against `database_url` and render its Data
    Docs page (`run_suite` of `batch_integrity_suite(ledger)`): the run's page only, which its
    checks link to. The index and the suites' pages are the full audit's to rebuild:
    rebuilding the index reads the latest hundred validation results, a second of every batch
    audit."""
    return run_suite(batch_integrity_suite(ledger), database_url, project_root)


def run_suite(
    spec: SuiteSpec, database_url: str, project_root: Path = DEFAULT_PROJECT_ROOT
) -> list[CheckResult]:
    """Run the checkpoint of the suite `spec` against `database_url` and render Data Docs.

    `database_url` is the SQLAlchemy URL of the system of record (`postgresql://...` is
    accepted too); it reaches Great Expectations at run time only. `project_root` holds the
    file context (`<project_root>/gx`), created or brought up to date first (the suite's own
    files only: another suite's are left as they are). Returns one `CheckResult` per
    expectation, in suite order: a short `name`, up to `MAX_FINDINGS` `findings` (offending
    rows) when it fails, and as `link` the Data Docs index page (`suites.SITE`) or the run's
    own page (`RUN_PAGE`: see `SuiteSpec.data_docs`). Can be called repeatedly in one
    process, for the same database or different ones.

    Raises `sqlalchemy.exc.OperationalError` if the database cannot be reached: that is no
    finding about the data, and Great Expectations would bury it under a traceback per rule.
    """
    url = with_session_settings(to_sqlalchemy_url(database_url), spec.session_settings)
    _check_reachable(url)
    with _RUN_LOCK, quiet():
        context = open_context(Path(project_root), url)
        try:
            checkpoint = ensure_checkpoint(context, spec)
            order = [
                (e.meta or {}).get(CHECK_NAME)
                for definition in checkpoint.validation_definitions
                for e in definition.suite.expectations
            ]
            result = checkpoint.run()
            if spec.data_docs == RUN_PAGE:
                link = build_run_pages(context, result)
            else:
                link = data_docs_index(context)
            checks = check_results(result, link)
            # Great Expectations returns results in its own order; report them in the suite's.
            return sorted(
                checks, key=lambda c: order.index(c.name) if c.name in order else len(order)
            )
        finally:
            dispose_engines(context)


def _check_reachable(database_url: str) -> None:
    engine = create_engine(database_url)
    try:
        with engine.connect():
            pass
    finally:
        engine.dispose()
