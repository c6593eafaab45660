"""The Merkle tree over a table's bucket digests, computed by the audit on its own.

The store keeps each table's bucket digests and the root of the tree over them
(`ledger_engine.store.merkle`); the audit recomputes both from the tables, the digests in SQL
(`sql/0009_merkle_functions.sql`) and the tree here. This module is written apart from the
store's on purpose: a pair of independent computations of one property, so that a mistake in
one cannot hide itself by being repeated in the other (an audit never reuses the code it
checks). The shape is the documented one: 4,096 buckets, each digest as 32 big-endian bytes,
a complete binary tree whose nodes are `sha256(left || right)`.
"""

from __future__ import annotations

from collections.abc import Mapping
from hashlib import sha256

DEPTH = 12  # levels of nodes above the buckets
BUCKET_COUNT = 2**DEPTH
DIGEST_MODULUS = 2**256


def tree_levels(digests: Mapping[int, int]) -> list[list[bytes]]:
    """Each level of the tree, the buckets first and the root last (a missing bucket is 0)."""
    assert all(0 <= bucket < BUCKET_COUNT for bucket in digests), "bucket out of range"
    nodes = [int(digests.get(bucket, 0)).to_bytes(32, "big") for bucket in range(BUCKET_COUNT)]
    levels = [nodes]
    for _ in range(DEPTH):
        pairs = zip(nodes[0::2], nodes[1::2], strict=True)
        nodes = [sha256(left + right).digest() for left, right in pairs]
        levels.append(nodes)
    assert len(levels[-1]) == 1
    return levels


def tree_root(digests: Mapping[int, int]) -> str:
    """The root of the tree over `digests`, as hex."""
    return tree_levels(digests)[-1][0].hex()


ROOT_OF_NOTHING = tree_root({})
