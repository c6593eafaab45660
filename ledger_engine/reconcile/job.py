"""The reconciliation job: a ledger's declared sources reconciled on Spark, as `ledger
reconcile`, `ledger demo` and the `ledger_reconcile` DAG run it.

`declared_sources` reads the ledger's sources and rules; `run_reconciliation` opens the store
and a Spark session, runs `run.reconcile` with the Spark matcher, and closes what it opened.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ledger_engine.config import Settings
from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.reconcile.run import ReconcileReport, reconcile
from ledger_engine.reconcile.sources import Sources, load_sources
from ledger_engine.reconcile.statement_inbox import make_folders
from ledger_engine.store.database import ledger_schema, open_store

if TYPE_CHECKING:  # Spark is imported by the job only when it runs
    from pyspark.sql import SparkSession


def declared_sources(settings: Settings, ledger: StreamingLedger) -> Sources:
    """The ledger's declared statement sources, each one's inbox folder created if missing
    (so that a person finds where its files go before any has landed); `FileNotFoundError`
    if it declares none, `SourcesError` if its declaration is wrong."""
    path = sources_file(settings, ledger)
    if not path.is_file():
        raise FileNotFoundError(f"no sources declared: {path} does not exist")
    sources = load_sources(path, ledger.tables, ledger.streams)
    make_folders(settings.statements, sources)
    return sources


def sources_file(settings: Settings, ledger: StreamingLedger) -> Path:
    """Where `ledger`'s statement sources are declared (`LEDGER_RECONCILIATION`, or its
    `reconciliation.toml` beside its expectations)."""
    return settings.reconciliation_file(ledger_schema(ledger))


def run_reconciliation(
    settings: Settings,
    ledger: StreamingLedger,
    sources: Sources,
    *,
    who: str,
    dry_run: bool = False,
    spark: SparkSession | None = None,
) -> ReconcileReport:
    """Reconcile every source of `ledger` on `spark`, or on a Spark session started here and
    stopped afterwards (a caller in the same process may hold one, which getOrCreate hands
    out again: that one is left running)."""
    from pyspark.sql import SparkSession

    from ledger_engine.reconcile.matching.spark import spark_matcher
    from ledger_engine.runtime.spark.session import build_session

    engine = open_store(settings, ledger)
    try:
        started_here = spark is None and SparkSession.getActiveSession() is None
        spark = spark or build_session(
            settings.spark_master,
            app_name="ledger-reconcile",
            driver_host=settings.spark_driver_host,
            driver_memory=settings.spark_driver_memory,
            jit="full",  # the matcher's joins run in the JVM
        )
        try:
            return reconcile(
                engine,
                sources,
                settings.statements,
                spark_matcher(spark),
                who=who,
                dry_run=dry_run,
            )
        finally:
            if started_here:
                spark.stop()
    finally:
        engine.dispose()
