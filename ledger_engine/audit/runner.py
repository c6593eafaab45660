"""Running the audits over the system of record and writing the report.

Each audit is callable on its own (the Airflow DAG runs them as separate tasks) or all together
through `run_audits` (the `ledger audit` command).
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine

from ledger_engine.apps import load_ledger
from ledger_engine.audit.findings import AuditReport, CheckResult
from ledger_engine.audit.report import write_report
from ledger_engine.audit.verify import verify_ledger
from ledger_engine.config import PROJECT_ROOT, Settings
from ledger_engine.faults import DURING_AUDITS, NO_FAULTS, FaultSwitch
from ledger_engine.store.database import open_store

EXPECTATIONS_ROOT = PROJECT_ROOT / "expectations"


class AuditFailed(RuntimeError):
    """At least one audit check failed; the message lists the failures."""

    def __init__(self, failures: list[CheckResult]) -> None:
        lines = [f"{c.suite}: {c.name}: {'; '.join(c.findings[:3])}" for c in failures]
        super().__init__(f"{len(failures)} audit check(s) failed:\n" + "\n".join(lines))
        self.failures = failures


def snapshot_checks(settings: Settings, engine: Engine | None = None) -> list[CheckResult]:
    """`ledger verify`: the batch hash chain, every table's Merkle tree recomputed from
    PostgreSQL down to the keys that differ, and the batch rows' counts."""
    return verify_ledger(engine or open_store(settings), load_ledger(settings.app))


def expectation_checks(
    settings: Settings, engine: Engine | None = None, expectations_root: Path | None = None
) -> list[CheckResult]:
    """The Great Expectations suite over the system of record (also builds Data Docs)."""
    from ledger_engine.audit.expectations import run_expectations

    engine = engine or open_store(settings)
    url = engine.url.render_as_string(hide_password=False)
    return run_expectations(url, expectations_root or EXPECTATIONS_ROOT)


def raise_on_failure(checks: list[CheckResult]) -> None:
    """Raise `AuditFailed` if any check failed."""
    failures = [c for c in checks if not c.passed]
    if failures:
        raise AuditFailed(failures)


def run_audits(
    settings: Settings,
    *,
    engine: Engine | None = None,
    expectations_root: Path | None = None,
    faults: FaultSwitch = NO_FAULTS,
) -> tuple[AuditReport, Path]:
    """Every audit, then the HTML report; returns the report and the path of its page."""
    engine = engine or open_store(settings)
    report = AuditReport()
    report.checks.extend(snapshot_checks(settings, engine))
    faults.reach(DURING_AUDITS)
    report.checks.extend(expectation_checks(settings, engine, expectations_root))
    return report, write_report(engine, report, settings.reports)
