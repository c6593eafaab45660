"""The outcome of audit checks, shared by every kind of audit and by the reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

BATCHES = "batches"  # the batch audit: the batches after the last passing audit
FULL = "full"  # the full audit: every batch, the whole ledger
# Findings a failed check keeps, and a page lists: enough to recognise the fault and where it
# starts, few enough to read; a check that finds more says how many.
MAX_FINDINGS = 10


@dataclass(frozen=True)
class CheckResult:
    """One audit check: whether it passed and, if not, its first findings in plain words."""

    suite: str  # "merkle", "great_expectations", ...
    name: str
    passed: bool
    findings: tuple[str, ...] = ()
    link: str | None = None  # where a person reads more (e.g. Great Expectations' Data Docs)


@dataclass(frozen=True)
class AuditScope:
    """What one audit covered: batches `first_batch` to `last_batch` of a kind of audit.

    `last_batch` is the newest batch the audit saw when it started (-1: none committed yet),
    `last_batch_hash` its hash; a batch audit's `first_batch` follows the last passing audit's
    mark (`ledger_engine.audit.scope`), a full audit's is 0. An empty scope (no new batch) has
    `last_batch == first_batch - 1`."""

    kind: str  # BATCHES or FULL
    first_batch: int
    last_batch: int
    last_batch_hash: str | None = None

    @property
    def empty(self) -> bool:
        return self.last_batch < self.first_batch

    def describe(self) -> str:
        """The scope in words, as the report and the command line say it."""
        if self.last_batch < 0:
            return f"{self.kind_title}: no batch committed yet"
        if self.kind == FULL:
            return f"{self.kind_title}: every batch, 0 to {self.last_batch}"
        if self.empty:
            return (
                f"{self.kind_title}: no batch committed since the last passing audit "
                f"(through batch {self.last_batch})"
            )
        since = (
            f", after the last passing audit (through batch {self.first_batch - 1})"
            if self.first_batch > 0
            else ", no audit having passed before"
        )
        return f"{self.kind_title}: batches {self.first_batch} to {self.last_batch}{since}"

    @property
    def kind_title(self) -> str:
        return "Full audit" if self.kind == FULL else "Batch audit"

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (Airflow's XCom, the report's summary)."""
        return {
            "kind": self.kind,
            "first_batch": self.first_batch,
            "last_batch": self.last_batch,
            "last_batch_hash": self.last_batch_hash,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AuditScope:
        return cls(
            data["kind"], data["first_batch"], data["last_batch"], data.get("last_batch_hash")
        )


@dataclass
class AuditReport:
    """Every check of one audit run, what the run covered (None: not said), and the seconds
    its parts took (for profiles; `run_audits` fills them)."""

    checks: list[CheckResult] = field(default_factory=list)
    scope: AuditScope | None = None
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    def failures(self) -> list[CheckResult]:
        return [c for c in self.checks if not c.passed]
