"""Running the audits over the system of record, recording their marks and writing the report.

Two kinds of audit (`ledger_engine.audit.findings`):

- the *batch audit* (`BATCHES`), after every pipeline run: the batches after the last passing
  audit's mark, at a cost of those batches (`proof.batch_verify`, the batch suite of
  `expectations`);
- the *full audit* (`FULL`), `ledger audit --full` and the daily DAG: `ledger verify`'s
  recomputation of every Merkle tree and the whole-ledger Great Expectations suite (the daily
  DAG adds the replay).

Each has parts that the Airflow DAGs run as tasks of their own (`merkle_audit`,
`expectations_audit`, `replay_audit`, each giving the scope it covered and its checks), and
`conclude` ends an audit: a mark if every check passed, then the HTML report.
`run_audits` runs a whole audit (the `ledger` command).

Every part takes the ledger (`ledger=`, the user's build function's `StreamingLedger`): a caller
running several parts builds it once (`load_ledger`) and gives it to each, as `run_audits` does;
a part given none builds it from the settings (`LEDGER_APP`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sqlalchemy import Engine

from ledger_engine.apps import load_ledger
from ledger_engine.audit.findings import BATCHES, FULL, AuditReport, AuditScope, CheckResult
from ledger_engine.audit.proof.verify import verify_ledger
from ledger_engine.audit.scope import Mark, narrowest, read_scope, record_mark
from ledger_engine.config import Settings
from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.core.stopwatch import Stopwatch
from ledger_engine.errors import AuditFailed
from ledger_engine.faults import DURING_AUDITS, NO_FAULTS, FaultSwitch
from ledger_engine.report import write_report
from ledger_engine.report.provenance import Provenance, RunBatches
from ledger_engine.store.database import ledger_schema, open_store

# What one part of an audit covered, and its checks.
AuditPart = tuple[AuditScope, list[CheckResult]]


def expectations_project(settings: Settings, ledger: StreamingLedger) -> Path:
    """The Great Expectations project of `ledger`: one folder per ledger's schema."""
    return settings.expectations / ledger_schema(ledger)


def snapshot_checks(
    settings: Settings, engine: Engine | None = None, *, ledger: StreamingLedger | None = None
) -> list[CheckResult]:
    """`ledger verify`: the batch hash chain, every table's Merkle tree recomputed from
    PostgreSQL down to the keys that differ, and the batch rows' counts."""
    ledger = ledger or load_ledger(settings.app)
    return verify_ledger(engine or open_store(settings, ledger), ledger, invariants=False)


def expectation_checks(
    settings: Settings,
    engine: Engine | None = None,
    expectations_root: Path | None = None,
    *,
    ledger: StreamingLedger | None = None,
) -> list[CheckResult]:
    """The whole-ledger Great Expectations suite over the system of record (also builds Data
    Docs)."""
    from ledger_engine.audit.expectations.run import run_expectations

    ledger = ledger or load_ledger(settings.app)
    engine = engine or open_store(settings, ledger)
    root = expectations_root or expectations_project(settings, ledger)
    return run_expectations(_url(engine), ledger, root)


def merkle_audit(
    settings: Settings, kind: str, engine: Engine, *, ledger: StreamingLedger | None = None
) -> AuditPart:
    """The Merkle trees and the hash chain: over the scope (`BATCHES`) or every batch (`FULL`,
    `ledger verify`'s checks)."""
    ledger = ledger or load_ledger(settings.app)
    if kind == FULL:
        scope = read_scope(engine, FULL)
        return scope, snapshot_checks(settings, engine, ledger=ledger)
    from ledger_engine.audit.proof.batch_verify import verify_batches

    return verify_batches(engine, ledger)


def expectations_audit(
    settings: Settings,
    kind: str,
    engine: Engine,
    expectations_root: Path | None = None,
    *,
    ledger: StreamingLedger | None = None,
) -> AuditPart:
    """Great Expectations: the batch suite (`BATCHES`) or the whole-ledger suite (`FULL`). The
    scope is read first: the batch suite's rules read theirs when they run, which covers it."""
    ledger = ledger or load_ledger(settings.app)
    scope = read_scope(engine, kind)
    if kind == FULL:
        return scope, expectation_checks(settings, engine, expectations_root, ledger=ledger)
    from ledger_engine.audit.expectations.run import run_batch_expectations

    root = expectations_root or expectations_project(settings, ledger)
    return scope, run_batch_expectations(_url(engine), ledger, root)


def replay_audit(
    settings: Settings,
    engine: Engine,
    on_progress: Callable | None = None,
    *,
    ledger: StreamingLedger | None = None,
) -> AuditPart:
    """The re-derivation of the whole stored event log (a full audit's, in the daily DAG)."""
    from ledger_engine.audit.rederivation.replay import replay_checks

    scope = read_scope(engine, FULL)
    return scope, replay_checks(engine, ledger or load_ledger(settings.app), on_progress)


def conclude(
    engine: Engine,
    parts: Sequence[AuditPart],
    reports_dir: Path,
    extra: Sequence[CheckResult] = (),
    *,
    written_by: Provenance | None = None,
    run: RunBatches | None = None,
) -> tuple[AuditReport, Path, Mark | None]:
    """End an audit made of `parts`: record its mark if every check of every part passed,
    then write the report (`extra` checks, such as the pipeline's, shown first;
    they take no part in the mark), saying who wrote it (`written_by`) and which batches the
    pipeline run before the audit added (`run`, if one did). Returns the report, the path of
    its page and the mark (None: none left)."""
    scope = narrowest(s for s, _ in parts)
    checks = [check for _, part_checks in parts for check in part_checks]
    mark = None
    if _all_passed(checks):
        mark = record_mark(engine, scope, len(checks))
    report = AuditReport([*extra, *checks], scope)
    page = write_report(engine, report, reports_dir, written_by=written_by, run=run)
    return report, page, mark


def raise_on_failure(checks: list[CheckResult]) -> None:
    """Raise `AuditFailed` if any check failed."""
    failures = [c for c in checks if not c.passed]
    if failures:
        raise AuditFailed(failures)


def run_audits(
    settings: Settings,
    *,
    ledger: StreamingLedger | None = None,
    engine: Engine | None = None,
    expectations_root: Path | None = None,
    faults: FaultSwitch = NO_FAULTS,
    full: bool = False,
    written_by: Provenance | None = None,
    run: RunBatches | None = None,
) -> tuple[AuditReport, Path]:
    """The batch audit (the full audit with `full`): its Merkle and chain part, its Great
    Expectations part, its mark if both passed, and the HTML report; returns the report and the
    path of its page. `ledger` (default: built once from the settings) serves every part and
    the store opened when no `engine` is given. The page says who wrote it (`written_by`: the
    command) and what the pipeline run before the audit added (`run`, if one did)."""
    ledger = ledger or load_ledger(settings.app)
    opened_here = open_store(settings, ledger) if engine is None else None
    try:
        return _audit(
            settings,
            ledger,
            engine or opened_here,
            expectations_root,
            faults,
            full,
            written_by=written_by,
            run=run,
        )
    finally:
        if opened_here is not None:
            opened_here.dispose()  # its connections are this call's alone


def _audit(
    settings: Settings,
    ledger: StreamingLedger,
    engine: Engine,
    expectations_root: Path | None,
    faults: FaultSwitch,
    full: bool,
    *,
    written_by: Provenance | None,
    run: RunBatches | None,
) -> tuple[AuditReport, Path]:
    kind = FULL if full else BATCHES
    # The two parts read the same committed batches on connections of their own and share
    # nothing, so the Great Expectations part runs beside the Merkle part: each mostly waits
    # on PostgreSQL, which then works on two cores instead of one.
    watch = Stopwatch()

    def expectations_part() -> AuditPart:
        with watch.timed("expectations part"):
            return expectations_audit(settings, kind, engine, expectations_root, ledger=ledger)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="expectations") as beside:
        expectations = beside.submit(expectations_part)
        with watch.timed("merkle part"):
            merkle = merkle_audit(settings, kind, engine, ledger=ledger)
        faults.reach(DURING_AUDITS)
        parts = [merkle, expectations.result()]
    with watch.timed("mark and report"):
        report, path, _ = conclude(engine, parts, settings.reports, written_by=written_by, run=run)
    report.seconds.update(watch.seconds)
    return report, path


def _all_passed(checks: Sequence[CheckResult]) -> bool:
    """Whether there are checks and every one passed: what a mark needs."""
    return bool(checks) and all(c.passed for c in checks)


def _url(engine: Engine) -> str:
    return engine.url.render_as_string(hide_password=False)
