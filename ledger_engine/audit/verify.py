"""`ledger verify`: prove the system of record is what the engine committed, from PostgreSQL
alone, and say exactly where it is not.

- the batch chain (`ledger_engine.audit.chain`): contiguous batch rows, each hashing to its
  recorded hash and naming the hash of the batch before; the first broken link is named;
- every table's Merkle tree recomputed in SQL against the recorded roots and bucket digests,
  descending to the keys that differ (`ledger_engine.audit.snapshots`);
- every batch row's counts against the rows they describe.
"""

from __future__ import annotations

from sqlalchemy import Engine

from ledger_engine.api import StreamingLedger
from ledger_engine.audit.chain import verify_chain
from ledger_engine.audit.findings import CheckResult
from ledger_engine.audit.snapshots import verify_snapshots


def verify_ledger(engine: Engine, ledger: StreamingLedger) -> list[CheckResult]:
    """Every check of `ledger verify`, chain first (it proves the roots the others use)."""
    return [verify_chain(engine), *verify_snapshots(engine, ledger)]
