"""The batch chain audit: batch rows are contiguous, each hashes to its recorded `batch_hash`,
and each names the hash of the batch before (`prev_hash`; batch 0 names `GENESIS_HASH`).

A batch row's hash covers its counts, input and Merkle roots (`HASHED_FIELDS`): the SHA-256 of
the JSON object of those fields, keys sorted, no spaces, UTF-8 (the format the commit writes,
`ledger_engine.store.commit.batch_row_hash`, recomputed here with code of the audit's own, so
that a mistake in the commit's cannot vouch for itself). So a chain
that holds from batch 0 to the last proves that no batch row was altered, removed or
reordered, and that the last batch's roots are the ones the engine recorded. The audit names
the *first* broken link: everything before it is proven, everything after it is not.

The batch audit checks a slice of the chain (`verify_chain_slice`): the batches in its scope,
linked to the batch before the scope, whose hash must still be the one the last passing audit
recorded in its mark (`ledger_engine.audit.scope`). With that audit's own proof, the chain
then holds from batch 0 to the newest batch, at a cost of the scope's batches only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from datetime import UTC
from typing import Any

from sqlalchemy import Connection, Engine, text

from ledger_engine.audit.findings import MAX_FINDINGS, AuditScope, CheckResult
from ledger_engine.audit.scope import Mark
from ledger_engine.audit.sql_files import audit_query

# The documented format of a batch row's hash: which fields, and the hash that batch 0 names.
HASHED_FIELDS = (
    "batch_id",
    "ledger",
    "input_fingerprint",
    "input_files",
    "events_ingested",
    "applied",
    "rejected",
    "duplicates",
    "changes",
    "results",
    "merkle_roots",
    "prev_hash",
)
GENESIS_HASH = "0" * 64


def batch_row_hash(row: Mapping[str, Any]) -> str:
    """The hash a batch row should carry, recomputed from its recorded fields."""
    fields = {name: row[name] for name in HASHED_FIELDS}
    document = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(document.encode("utf-8")).hexdigest()


SUITE = "merkle"
NAME = "batch hash chain"
SLICE_NAME = "batch hash chain over the scope"
# Both read `HASHED_FIELDS` and `batch_hash` (the files name the columns, in that order); the
# slice's range is bound.
_ALL = text(audit_query("chain_batches"))
_SLICE = text(audit_query("chain_slice"))


def verify_chain(engine: Engine) -> CheckResult:
    """The chain check over every batch row, in batch id order."""
    with engine.connect() as conn:
        rows = [dict(r._mapping) for r in conn.execute(_ALL)]
    return _check(NAME, chain_breaks(rows))


def verify_chain_slice(conn: Connection, scope: AuditScope, mark: Mark | None) -> CheckResult:
    """The chain over the batches of `scope` and its link to the batch before it, which must
    still hash to the hash `mark` (the mark the scope starts after) recorded; also names batch
    rows that `mark` vouched for and that are gone."""
    first = scope.first_batch
    rows = [
        dict(r._mapping)
        for r in conn.execute(_SLICE, {"first": max(first - 1, 0), "last": scope.last_batch})
    ]
    findings: list[str] = []
    previous_hash = GENESIS_HASH
    if mark is not None and scope.last_batch < mark.audited_through:
        findings.append(
            f"batch {mark.audited_through}: gone, though the audit of {_when(mark)} proved "
            f"batches through it; the newest batch row is {scope.last_batch}"
        )
    if first > 0 and scope.last_batch >= first - 1:
        before = rows.pop(0) if rows and rows[0]["batch_id"] == first - 1 else None
        findings += _audited_batch_breaks(first - 1, before, mark)
        previous_hash = before["batch_hash"] if before else None
    findings += chain_breaks(rows, first_id=first, previous_hash=previous_hash)
    return _check(SLICE_NAME, findings)


def _audited_batch_breaks(
    batch_id: int, row: Mapping[str, Any] | None, mark: Mark | None
) -> list[str]:
    """What is wrong with the batch before the scope, which an earlier audit proved."""
    if row is None:
        return [f"batch {batch_id}: its batch row, proven by an earlier audit, is missing"]
    breaks = []
    if batch_row_hash(row) != row["batch_hash"]:
        breaks.append(f"batch {batch_id}: its fields do not hash to its recorded batch_hash")
    proven = mark is not None and mark.audited_through == batch_id
    if proven and row["batch_hash"] != mark.batch_hash:
        breaks.append(
            f"batch {batch_id}: its batch_hash is not the one the audit of {_when(mark)} "
            f"proved ({mark.batch_hash[:16]}...)"
        )
    return breaks


def _when(mark: Mark) -> str:
    return mark.audited_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _check(name: str, findings: list[str]) -> CheckResult:
    if findings:
        findings[0] = f"first broken link: {findings[0]}"
    return CheckResult(SUITE, name, not findings, tuple(findings[:MAX_FINDINGS]))


def chain_breaks(
    batches: Iterable[Mapping[str, Any]],
    *,
    first_id: int = 0,
    previous_hash: str | None = GENESIS_HASH,
) -> list[str]:
    """Every broken link of the chain, first first (empty: the chain holds): `batches` are the
    rows from `first_id` on, the first naming `previous_hash` (batch 0: the genesis hash; None:
    the batch before is missing, so no prev_hash is right)."""
    breaks: list[str] = []
    for expected_id, row in enumerate(batches, start=first_id):
        batch_id = row["batch_id"]
        if batch_id != expected_id:
            breaks.append(
                f"batch {batch_id}: expected batch {expected_id} (ids must be contiguous)"
            )
        if previous_hash is not None and row["prev_hash"] != previous_hash:
            breaks.append(f"batch {batch_id}: prev_hash is not the batch_hash of the batch before")
        if batch_row_hash(row) != row["batch_hash"]:
            breaks.append(f"batch {batch_id}: its fields do not hash to its recorded batch_hash")
        previous_hash = row["batch_hash"]
    return breaks
