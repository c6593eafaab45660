"""The batch chain audit: batch rows are contiguous, each hashes to its recorded `batch_hash`,
and each names the hash of the batch before (`prev_hash`; batch 0 names `GENESIS_HASH`).

A batch row's hash covers its counts, input and Merkle roots (`HASHED_FIELDS`), so a chain
that holds from batch 0 to the last proves that no batch row was altered, removed or
reordered, and that the last batch's roots are the ones the engine recorded. The audit names
the *first* broken link: everything before it is proven, everything after it is not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import Engine, text

from ledger_engine.audit.findings import CheckResult
from ledger_engine.store.commit import GENESIS_HASH, HASHED_FIELDS, batch_row_hash

SUITE = "merkle"
NAME = "batch hash chain"
MAX_FINDINGS = 10


def verify_chain(engine: Engine) -> CheckResult:
    """The chain check over every batch row, in batch id order."""
    columns = ", ".join(dict.fromkeys((*HASHED_FIELDS, "batch_hash")))
    with engine.connect() as conn:
        rows = [
            dict(r._mapping)
            for r in conn.execute(text(f"SELECT {columns} FROM ledger_batches ORDER BY batch_id"))
        ]
    findings = chain_breaks(rows)
    if findings:
        findings[0] = f"first broken link: {findings[0]}"
    return CheckResult(SUITE, NAME, not findings, tuple(findings[:MAX_FINDINGS]))


def chain_breaks(batches: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every broken link of the chain, first first (empty: the chain holds)."""
    breaks: list[str] = []
    previous_hash = GENESIS_HASH
    for expected_id, row in enumerate(batches):
        batch_id = row["batch_id"]
        if batch_id != expected_id:
            breaks.append(
                f"batch {batch_id}: expected batch {expected_id} (ids must be contiguous)"
            )
        if row["prev_hash"] != previous_hash:
            breaks.append(f"batch {batch_id}: prev_hash is not the batch_hash of the batch before")
        if batch_row_hash(row) != row["batch_hash"]:
            breaks.append(f"batch {batch_id}: its fields do not hash to its recorded batch_hash")
        previous_hash = row["batch_hash"]
    return breaks
