"""`ledger verify`: prove the system of record is what the engine committed, from PostgreSQL
alone, and say exactly where it is not.

- the batch chain (`ledger_engine.audit.proof.chain`): contiguous batch rows, each hashing to its
  recorded hash and naming the hash of the batch before; the first broken link is named;
- every table's Merkle tree recomputed in SQL against the recorded roots and bucket digests,
  descending to the keys that differ (`ledger_engine.audit.proof.snapshots`);
- every batch row's counts against the rows they describe, and no log rows of a batch that
  has no batch row (the same SQL as the Great Expectations rules of those names);
- every invariant the application declares (`ledger_engine.core.invariants`), with the SQL
  of the Great Expectations rule of its name, over the declared tables' current rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy import Engine, Row, text

from ledger_engine.audit.expectations.queries import (
    batch_contiguity_query,
    batch_counts_query,
    invariant_query,
    state_rows_query,
)
from ledger_engine.audit.findings import MAX_FINDINGS, CheckResult
from ledger_engine.audit.proof.chain import verify_chain
from ledger_engine.audit.proof.snapshots import SUITE, verify_snapshots
from ledger_engine.core.declarations import StreamingLedger

COUNTS = "batch counts equal the rows they describe"
INVARIANTS = "invariants"  # `CheckResult.suite` of the declared invariants' checks


def verify_ledger(
    engine: Engine, ledger: StreamingLedger, *, invariants: bool = True
) -> list[CheckResult]:
    """Every check of `ledger verify`, chain first (it proves the roots the others use); the
    declared invariants last, unless `invariants` is false (a full audit, whose Great
    Expectations suite checks them already)."""
    checks = [verify_chain(engine), *verify_snapshots(engine, ledger), verify_counts(engine)]
    return checks + (verify_invariants(engine, ledger) if invariants else [])


def verify_invariants(engine: Engine, ledger: StreamingLedger) -> list[CheckResult]:
    """One check per declared invariant: the rows that break it, none if it holds."""
    state_rows = f"({state_rows_query(list(ledger.tables.values()))})"
    checks = []
    with engine.connect() as conn:
        for invariant in ledger.invariants.values():
            query = invariant_query(invariant).format(batch=state_rows)
            broken = conn.execute(text(query)).mappings().all()
            findings = [_finding(row) for row in broken[:MAX_FINDINGS]]
            if len(broken) > MAX_FINDINGS:
                findings.append(f"{len(broken) - MAX_FINDINGS} more")
            checks.append(CheckResult(INVARIANTS, invariant.name, not broken, tuple(findings)))
    return checks


def _finding(row: Mapping[str, object]) -> str:
    return ", ".join(f"{column} {value}" for column, value in row.items())


def verify_counts(engine: Engine) -> CheckResult:
    """Each batch row's counts equal the rows of its batch; no rows of a missing batch."""
    with engine.connect() as conn:
        wrong = conn.execute(text(batch_counts_query())).all()
        orphans = conn.execute(text(batch_contiguity_query())).all()
    return counts_check(COUNTS, wrong, orphans)


def counts_check(name: str, wrong: Sequence[Row], orphans: Sequence[Row]) -> CheckResult:
    """The counts check from the rows of the counts rule and of the contiguity rule."""
    findings = [
        f"batch {row.batch_id}: {row.field} recorded {row.recorded}, found {row.found}"
        for row in wrong
    ]
    findings += [
        f"batch {row.batch_id}: {row.table_name} holds rows of a batch that has no batch row"
        for row in orphans
        if row.table_name != "ledger_batches"  # a gap in the batch ids: the chain names it
    ]
    shown = findings[:MAX_FINDINGS]
    if len(findings) > MAX_FINDINGS:
        shown.append(f"{len(findings) - MAX_FINDINGS} more")
    return CheckResult(SUITE, name, not findings, tuple(shown))
