"""The outcome of audit checks, shared by every kind of audit and by the reports."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class CheckResult:
    """One audit check: whether it passed and, if not, its first findings in plain words."""

    suite: str  # "merkle", "great_expectations", ...
    name: str
    passed: bool
    findings: tuple[str, ...] = ()
    link: str | None = None  # where a person reads more (e.g. Great Expectations' Data Docs)


@dataclass
class AuditReport:
    """Every check of one audit run."""

    checks: list[CheckResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    def failures(self) -> list[CheckResult]:
        return [c for c in self.checks if not c.passed]
