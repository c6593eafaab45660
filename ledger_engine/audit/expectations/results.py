"""Great Expectations' validation results as the audit's `CheckResult`s: one per expectation,
named by its check's short name, with up to `MAX_FINDINGS` findings (the offending rows, or the
error that stopped it) when it fails."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ledger_engine.audit.expectations.rules import SUITE
from ledger_engine.audit.expectations.suites import AUDIT_SUITE, CHECK_NAME
from ledger_engine.audit.findings import MAX_FINDINGS, CheckResult

if TYPE_CHECKING:
    from great_expectations.checkpoint.checkpoint import CheckpointResult
    from great_expectations.core.expectation_validation_result import (
        ExpectationValidationResult,
    )


def check_results(checkpoint_result: CheckpointResult, link: str | None) -> list[CheckResult]:
    """One `CheckResult` per expectation of `checkpoint_result`, each linking to `link`."""
    checks = []
    for suite_result in checkpoint_result.run_results.values():
        for result in suite_result.results:
            config = result.expectation_config
            meta = config.meta or {}
            name = meta.get(CHECK_NAME) or config.description or config.type
            checks.append(
                CheckResult(
                    suite=str(meta.get(AUDIT_SUITE) or SUITE),
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
