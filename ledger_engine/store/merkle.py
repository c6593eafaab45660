"""Merkle trees of table snapshots, with a fixed shape so that they update incrementally.

A table's rows are spread over `BUCKETS` buckets by a hash of their key. A row's *leaf* is
`sha256(canonical_json([key, value]))` read as a 256-bit number; a bucket's *digest* is the sum
of its rows' leaves modulo 2**256 (a multiset hash: it does not depend on the order of the
rows, and a changed row updates it by subtracting its old leaf and adding its new one, without
reading the bucket's other rows). The *root* is a complete binary Merkle tree over the bucket
digests in bucket order (each digest as 32 big-endian bytes; a node is `sha256(left || right)`).

So the engine keeps each table's tree up to date from a batch's net changes alone (before and
after of each written row), and an audit that recomputes the digests from the table finds the
buckets that differ by comparing digests, then the rows by comparing the bucket's rows.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from ledger_engine.core.storable import canonical_utf8

BUCKET_BITS = 12
BUCKETS = 1 << BUCKET_BITS
MODULUS = 1 << 256


def bucket_of(key: Any) -> int:
    """The bucket of a key: the top `BUCKET_BITS` bits of the hash of its canonical JSON."""
    return _bucket(_json(key))


def leaf(key: Any, value: Any) -> int:
    """The leaf of a row, a 256-bit number."""
    return _leaf(_json(key), value)


def change_delta(key: Any, before: Any, after: Any) -> tuple[int, int]:
    """(bucket, digest delta) of a row going from `before` to `after` (`None`: absent)."""
    key_json = _json(key)
    return _bucket(key_json), _row_delta(key_json, before, after) % MODULUS


def bucket_deltas(changes: Iterable[tuple[Any, Any, Any]]) -> dict[int, int]:
    """The digest delta of each bucket that rows going from `before` to `after` (`None`:
    absent) change, from (key, before, after) of each row; buckets whose delta is 0 too.

    The sink's hot path: each key is encoded once for its bucket and both leaves, and the
    sums are reduced modulo 2**256 once per bucket rather than per row."""
    sums: dict[int, int] = {}
    for key, before, after in changes:
        key_json = _json(key)
        bucket = _bucket(key_json)
        sums[bucket] = sums.get(bucket, 0) + _row_delta(key_json, before, after)
    return {bucket: delta % MODULUS for bucket, delta in sums.items()}


def _row_delta(key_json: bytes, before: Any, after: Any) -> int:
    delta = 0
    if after is not None:
        delta += _leaf(key_json, after)
    if before is not None:
        delta -= _leaf(key_json, before)
    return delta


def _json(value: Any) -> bytes:
    # `canonical_utf8(value)`, written without the encoder for the common keys and values:
    # printable ASCII without a quote or a backslash is its own JSON inside quotes, an int is
    # its decimal digits.
    kind = type(value)
    if kind is int:
        return str(value).encode()
    printable = kind is str and value.isascii() and value.isprintable()
    if printable and '"' not in value and "\\" not in value:
        return b'"' + value.encode() + b'"'
    return canonical_utf8(value)


def _bucket(key_json: bytes) -> int:
    digest = hashlib.sha256(key_json).digest()
    return int.from_bytes(digest[:2], "big") >> (16 - BUCKET_BITS)


def _leaf(key_json: bytes, value: Any) -> int:
    # The canonical JSON of [key, value] is "[" key "," value "]" (no spaces).
    row_json = b"[" + key_json + b"," + _json(value) + b"]"
    return int.from_bytes(hashlib.sha256(row_json).digest(), "big")


def add_deltas(digests: dict[int, int], deltas: Iterable[tuple[int, int]]) -> None:
    """Add (bucket, delta) pairs to `digests` (bucket -> digest; a missing bucket is 0)."""
    for bucket, delta in deltas:
        digests[bucket] = (digests.get(bucket, 0) + delta) % MODULUS


def digests_of(rows: Iterable[tuple[Any, Any]]) -> dict[int, int]:
    """The bucket digests of a whole table (bucket -> digest, empty buckets left out)."""
    digests: dict[int, int] = {}
    for key, value in rows:
        bucket = bucket_of(key)
        digests[bucket] = (digests.get(bucket, 0) + leaf(key, value)) % MODULUS
    return {b: d for b, d in digests.items() if d}


def tree_levels(digests: Mapping[int, int]) -> list[list[bytes]]:
    """Every level of the tree over the bucket digests (missing buckets are 0), leaves first,
    the root last."""
    level = [digests.get(b, 0).to_bytes(32, "big") for b in range(BUCKETS)]
    levels = [level]
    while len(level) > 1:
        level = [hashlib.sha256(level[i] + level[i + 1]).digest() for i in range(0, len(level), 2)]
        levels.append(level)
    return levels


def root_of(digests: Mapping[int, int]) -> str:
    """The root (hex) of the tree over the bucket digests (missing buckets are 0)."""
    return tree_levels(digests)[-1][0].hex()


EMPTY_ROOT = root_of({})
