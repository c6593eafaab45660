"""Merkle roots of table snapshots.

A table's snapshot is its rows sorted by key (code-point order for text keys, numeric order for
integer keys). Each row is a leaf, `sha256(canonical_json([key, value]))`; each level pairs
neighbours as `sha256(left || right)`, carrying an odd last node up unchanged. The empty table's
root is `sha256(b"")`. The engine records the root after every batch; the audit recomputes it
from PostgreSQL and must find the same.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from ledger_engine.model import canonical_json

EMPTY_ROOT = hashlib.sha256(b"").hexdigest()


def leaf_hash(key: Any, value: Any) -> bytes:
    return hashlib.sha256(canonical_json([key, value]).encode()).digest()


def merkle_root(rows: Iterable[tuple[Any, Any]]) -> str:
    """The root over `rows`, which must already be sorted by key (asserted)."""
    level: list[bytes] = []
    previous: Any = _NOTHING
    for key, value in rows:
        assert previous is _NOTHING or previous < key, f"rows not sorted by key at {key!r}"
        previous = key
        level.append(leaf_hash(key, value))
    if not level:
        return EMPTY_ROOT
    while len(level) > 1:
        paired = [
            hashlib.sha256(level[i] + level[i + 1]).digest() for i in range(0, len(level) - 1, 2)
        ]
        if len(level) % 2:
            paired.append(level[-1])
        level = paired
    return level[0].hex()


_NOTHING = object()
