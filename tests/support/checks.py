"""What an audit's checks found, as the audit tests compare it: the failed checks by name."""

from __future__ import annotations

from ledger_engine.audit.findings import CheckResult


def failures(checks: list[CheckResult]) -> dict[str, tuple[str, ...]]:
    """The findings of each check of `checks` that failed, by the check's name (empty when
    every check passed)."""
    return {c.name: c.findings for c in checks if not c.passed}
