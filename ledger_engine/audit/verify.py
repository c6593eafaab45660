"""`ledger verify`: prove the system of record is what the engine committed, from PostgreSQL
alone, and say exactly where it is not.

- the batch chain (`ledger_engine.audit.chain`): contiguous batch rows, each hashing to its
  recorded hash and naming the hash of the batch before; the first broken link is named;
- every table's Merkle tree recomputed in SQL against the recorded roots and bucket digests,
  descending to the keys that differ (`ledger_engine.audit.snapshots`);
- every batch row's counts against the rows they describe, and no log rows of a batch that
  has no batch row (the same SQL as the Great Expectations rules of those names).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Engine, Row, text

from ledger_engine.audit.chain import verify_chain
from ledger_engine.audit.expectations import batch_contiguity_query, batch_counts_query
from ledger_engine.audit.findings import CheckResult
from ledger_engine.audit.snapshots import SUITE, verify_snapshots
from ledger_engine.core.declarations import StreamingLedger

COUNTS = "batch counts equal the rows they describe"
MAX_FINDINGS = 10


def verify_ledger(engine: Engine, ledger: StreamingLedger) -> list[CheckResult]:
    """Every check of `ledger verify`, chain first (it proves the roots the others use)."""
    return [verify_chain(engine), *verify_snapshots(engine, ledger), verify_counts(engine)]


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
