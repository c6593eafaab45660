"""The Merkle snapshot audit: recompute every table's root and the batch hash chain from
PostgreSQL and compare them with what the engine recorded at commit time."""

from __future__ import annotations

from sqlalchemy import Engine, text

from ledger_engine.api import StreamingLedger
from ledger_engine.audit.findings import CheckResult
from ledger_engine.audit.merkle import digests_of, root_of
from ledger_engine.store.commit import GENESIS_HASH, batch_row_hash
from ledger_engine.store.state import snapshot_rows

SUITE = "merkle"
_MAX_FINDINGS = 10


def verify_snapshots(engine: Engine, ledger: StreamingLedger) -> list[CheckResult]:
    """One check for the batch chain and one per table for its Merkle root."""
    with engine.connect() as conn:
        batches = [
            dict(row._mapping)
            for row in conn.execute(text("SELECT * FROM ledger_batches ORDER BY batch_id"))
        ]
        checks = [_chain_check(batches)]
        recorded = batches[-1]["merkle_roots"] if batches else {}
        for name, table in sorted(ledger.tables.items()):
            digests = digests_of(snapshot_rows(conn, table))
            found = root_of(digests)
            # Nothing committed yet: nothing recorded to disagree with.
            expected = recorded.get(name) if batches else found
            findings: tuple[str, ...] = ()
            if found != expected:
                stored = {
                    bucket: int(digest, 16)
                    for bucket, digest in conn.execute(
                        text(
                            "SELECT bucket, digest FROM ledger_merkle_buckets"
                            " WHERE table_name = :name"
                        ),
                        {"name": name},
                    )
                }
                differing = sorted(
                    b for b in set(stored) | set(digests) if stored.get(b) != digests.get(b)
                )
                findings = (
                    f"table {name}: recorded root {expected} after batch "
                    f"{batches[-1]['batch_id']}, recomputed {found}",
                    *(f"table {name}: bucket {b} differs" for b in differing[:_MAX_FINDINGS]),
                )
            checks.append(CheckResult(SUITE, f"merkle root of {name}", not findings, findings))
    return checks


def _chain_check(batches: list[dict]) -> CheckResult:
    findings: list[str] = []
    previous_hash = GENESIS_HASH
    for expected_id, row in enumerate(batches):
        bid = row["batch_id"]
        if bid != expected_id:
            findings.append(
                f"batch {bid}: expected batch id {expected_id} (ids must be contiguous)"
            )
        if row["prev_hash"] != previous_hash:
            findings.append(f"batch {bid}: prev_hash does not match the hash of the batch before")
        if batch_row_hash(row) != row["batch_hash"]:
            findings.append(f"batch {bid}: its fields do not hash to its recorded batch_hash")
        previous_hash = row["batch_hash"]
    return CheckResult(SUITE, "batch hash chain", not findings, tuple(findings[:_MAX_FINDINGS]))
