"""The bodies of the Airflow DAGs' audit tasks (`dags/ledger_pipeline.py`: the batch audit after
every run; `dags/ledger_replay.py`: the daily full audit), kept here so that the DAG files stay
thin and parse without importing the platform. Airflow is imported only when a task runs.

An audit runs as one task per part (`merkle`, `great_expectations`, `replay`; see
`ledger_engine.tasks.audit_runs`) and a report task:

- a part's task runs its part, logs its checks, publishes every check and the scope it covered
  (XCom keys `audit_checks` and `audit_scope`) and fails, listing the failed checks, if one
  failed;
- the report task gathers what the parts published (running a part again only for a task that
  died before publishing), records the audit's mark if every check passed, writes the HTML
  report, and fails if a check failed or a task before it did not succeed, listing them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from ledger_engine.apps import load_ledger
from ledger_engine.audit.findings import AuditScope, CheckResult
from ledger_engine.config import Settings
from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.report.formats import plural
from ledger_engine.report.provenance import Provenance, RunBatches
from ledger_engine.store.database import open_store
from ledger_engine.tasks.audit_runs import (
    AuditPart,
    conclude,
    expectations_audit,
    merkle_audit,
    raise_on_failure,
    replay_audit,
)

# The XCom keys under which each audit task publishes all its checks (with every finding and
# link) and its scope, before it fails or succeeds: the report task uses them instead of
# auditing again. Not "checks": a task returning a dict also pushes each of its keys
# (`multiple_outputs` is inferred from the return annotation), and the summary's "checks"
# would overwrite it.
CHECKS_KEY = "audit_checks"
SCOPE_KEY = "audit_scope"
PROGRESS_EVERY_SECONDS = 30.0  # how often the replay's progress is logged
MAX_LISTED_FINDINGS = 10  # findings per failed check in a failed report task's message


@dataclass(frozen=True)
class _Audit:
    """What an audit task of `kind` runs its parts with: the settings, the ledger (built once
    per task) and the store opened with it."""

    kind: str
    settings: Settings
    ledger: StreamingLedger
    engine: Engine
    log: logging.Logger

    def run_part(self, part: str) -> AuditPart:
        """One part of the audit. The replay's own failure is a finding of its own, so that
        the report says the replay could not run."""
        settings, kind, engine, ledger = self.settings, self.kind, self.engine, self.ledger
        if part == "merkle":
            return merkle_audit(settings, kind, engine, ledger=ledger)
        if part == "great_expectations":
            return expectations_audit(settings, kind, engine, ledger=ledger)
        if part == "replay":
            try:
                return replay_audit(settings, engine, _progress_logger(self.log), ledger=ledger)
            except Exception as exc:
                self.log.exception("the replay could not run")
                finding = f"{type(exc).__name__}: {exc}"
                scope = AuditScope(kind, 0, -1)
                return scope, [CheckResult("replay", "the replay runs", False, (finding,))]
        raise ValueError(f"unknown audit part {part!r}")


@contextmanager
def _opened(kind: str, log: logging.Logger) -> Iterator[_Audit]:
    """An audit of `kind` on the store of the `LEDGER_*` settings, disposed at the end."""
    settings = Settings.from_env()
    ledger = load_ledger(settings.app)  # once: the store and every part run here need it
    engine = open_store(settings, ledger)
    try:
        yield _Audit(kind, settings, ledger, engine, log)
    finally:
        engine.dispose()


def _progress_logger(log: logging.Logger) -> Callable[[Any], None]:
    last_logged = [0.0]

    def on_progress(progress: Any) -> None:
        now = time.monotonic()
        if progress.phase == "events" and now - last_logged[0] < PROGRESS_EVERY_SECONDS:
            return
        last_logged[0] = now
        log.info("%s", progress.describe())

    return on_progress


def audit_part_task(part: str, kind: str, log: logging.Logger) -> dict[str, Any]:
    """The body of an audit part's task: run it, log it, publish it, fail if a check failed;
    returns a summary (counts of checks, the failed ones' names, links, the scope)."""
    with _opened(kind, log) as audit:
        scope, checks = audit.run_part(part)
    for line in part_summary(scope, checks):
        log.info("%s", line)
    _publish(scope, checks)
    raise_on_failure(checks)
    return {
        "checks": len(checks),
        "passed": sum(1 for c in checks if c.passed),
        "failed": [c.name for c in checks if not c.passed],
        "links": sorted({c.link for c in checks if c.link}),
        "scope": scope.to_dict(),
    }


def part_summary(scope: AuditScope, checks: Sequence[CheckResult]) -> list[str]:
    """What an audit part's task log says of it, a line each: its scope and how many checks
    passed, then each failed check by name (its findings are in the failure the task raises,
    and on the report)."""
    passed = sum(1 for c in checks if c.passed)
    lines = [f"{scope.describe()}: {passed:,} of {plural(len(checks), 'check')} passed"]
    lines += [f"check failed: {c.suite}: {c.name}" for c in checks if not c.passed]
    return lines


def _publish(scope: AuditScope, checks: list[CheckResult]) -> None:
    """Publish every check of this task, and its scope, for the report task."""
    from airflow.sdk import get_current_context

    ti = get_current_context()["ti"]
    ti.xcom_push(key=SCOPE_KEY, value=scope.to_dict())
    ti.xcom_push(
        key=CHECKS_KEY,
        value=[
            {
                "suite": c.suite,
                "name": c.name,
                "passed": c.passed,
                "findings": list(c.findings),
                "link": c.link,
            }
            for c in checks
        ],
    )


def report_task(
    kind: str,
    parts: Sequence[tuple[str, str]],
    upstream: Mapping[str, Any],
    log: logging.Logger,
    written_by: Provenance,
    pipeline_task: str | None = None,
    publish_page: Callable[[Path], None] | None = None,
) -> dict[str, Any]:
    """The body of an audit's report task. `parts` are (part, the task that ran it);
    `upstream` maps every task before this one to its return value (None: it did not
    succeed); `written_by` is this task of its DAG run, which the page names;
    `pipeline_task`, if given, is the task that committed the batches: the page names the
    batches it added (from its summary), or shows its failure as a check of its own, which
    takes no part in the mark. `publish_page`, if given, is called with the page's path as
    soon as it is written, before the task fails for an unclean audit (the DAG's link to the
    page, `ledger_engine.dags.publish_page`)."""
    from airflow.sdk import get_current_context

    ti = get_current_context()["ti"]
    not_succeeded = [task_id for task_id, output in upstream.items() if output is None]
    extra = []
    run = RunBatches.from_summary(upstream.get(pipeline_task)) if pipeline_task else None
    if pipeline_task is not None and upstream.get(pipeline_task) is None:
        # Say so on the page too: what is audited may miss landed events.
        finding = "the task failed: see its log in Airflow; what did commit is audited below"
        name = f"{pipeline_task} committed the inbox"
        extra.append(CheckResult("pipeline", name, False, (finding,)))
    with _opened(kind, log) as audit:
        gathered = [_gathered(ti, part, task_id, audit) for part, task_id in parts]
        report, page, mark = conclude(
            audit.engine,
            gathered,
            audit.settings.reports,
            extra,
            written_by=written_by,
            run=run,
        )
    if publish_page is not None:
        publish_page(page)
    log.info("audit report: %s (index: %s)", page, page.parent / "index.html")
    if mark is not None and mark.first_batch > mark.audited_through:
        log.info("audit mark: no batch added since the last audit")
    elif mark is not None:
        log.info("audit mark: batches %d to %d proven", mark.first_batch, mark.audited_through)

    failures = report.failures()
    if failures or not_succeeded:
        lines = [f"audit report: {page}"]
        lines += [f"task did not succeed: {task_id}" for task_id in not_succeeded]
        for check in failures:
            lines.append(f"check failed: {check.suite}: {check.name}")
            lines += [f"  {finding}" for finding in check.findings[:MAX_LISTED_FINDINGS]]
        raise RuntimeError("the audit is not clean:\n" + "\n".join(lines))
    return {
        "report": str(page),
        "index": str(page.parent / "index.html"),
        "checks": len(report.checks),
        "passed": report.passed,
        "scope": report.scope.to_dict() if report.scope else None,
    }


def _gathered(ti: Any, part: str, task_id: str, audit: _Audit) -> AuditPart:
    """What the task of `part` published, or the part run again here if it published nothing
    (killed, timed out); an audit that cannot run is a failed check of its own."""
    log = audit.log
    published = ti.xcom_pull(task_ids=task_id, key=CHECKS_KEY)
    scope = ti.xcom_pull(task_ids=task_id, key=SCOPE_KEY)
    if published is not None and scope is not None:
        log.info("%s: %d checks as %s published them", part, len(published), task_id)
        checks = [
            CheckResult(c["suite"], c["name"], c["passed"], tuple(c["findings"]), c["link"])
            for c in published
        ]
        return AuditScope.from_dict(scope), checks
    log.info("%s: %s published no checks; auditing again", part, task_id)
    try:
        return audit.run_part(part)
    except Exception as exc:  # the report still shows the audits that could run
        log.exception("the %s audit could not run", part)
        finding = f"{type(exc).__name__}: {exc}"
        scope = AuditScope(audit.kind, 0, -1)
        return scope, [CheckResult(part, "the audit runs", False, (finding,))]
