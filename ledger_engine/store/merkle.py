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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ledger_engine.core.storable import canonical_utf8

_sha256 = hashlib.sha256
# The method itself rather than `methodcaller("digest")`: no attribute lookup per digest.
_digest = type(_sha256(b"")).digest

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


def bucket_deltas_of_columns(
    keys: pa.Array | pa.ChunkedArray,
    before: pa.Array | pa.ChunkedArray,
    after: pa.Array | pa.ChunkedArray,
) -> dict[int, int]:
    """`bucket_deltas(zip(keys, before, after))` of columns (their `.to_pylist()` values):
    the same dict, in the same order, with the per-row work done in C: the JSON by Arrow, the
    SHA-256 digests in `map` loops, the sums per bucket by NumPy.

    `keys` is a string or int64 column; `before` and `after` are int64 or string columns
    (null: the row was absent; a column of type null: absent throughout). Any other type is
    a TypeError, not a fallback: only for these types are the Python values the values the
    caller means (a binary column of pickles would be read as bytes, not as what they
    pickle), so other columns are the caller's to decode and give to `bucket_deltas`. Null
    keys, and keys and string values that `_json` does not write as plain quoted text (not
    printable ASCII, or holding `"` or `\\`), are written by `_json` itself, row by row."""
    keys, before, after = _array(keys), _array(before), _array(after)
    if not len(keys) == len(before) == len(after):
        raise ValueError(
            f"keys, before and after differ in length: {len(keys)}, {len(before)}, {len(after)}"
        )
    if not (pa.types.is_int64(keys.type) or _is_text(keys.type)):
        raise TypeError(f"keys must be a string or int64 column, not {keys.type}")
    for name, column in (("before", before), ("after", after)):
        kind = column.type
        if not (pa.types.is_int64(kind) or _is_text(kind) or pa.types.is_null(kind)):
            raise TypeError(f"{name} must be an int64 or string column, not {kind}")
    if not len(keys):
        return {}
    key_json = _plain_json(keys)
    key_bytes = key_json.cast(pa.binary()).to_pylist()
    if key_json.null_count:
        redo = np.flatnonzero(key_json.is_null().to_numpy(zero_copy_only=False))
        for i, key in zip(redo.tolist(), keys.take(redo).to_pylist(), strict=True):
            key_bytes[i] = _json(key)
    # A key's bucket: the top 16 bits of its digest (big-endian), shifted; uint16 so that
    # NumPy's stable sort of buckets is a radix sort.
    top = np.frombuffer(_digests(key_bytes), ">u2").reshape(-1, 16)[:, 0]
    buckets = (top >> (16 - BUCKET_BITS)).astype(np.uint16)
    # Each row's JSON but for its value and "]" (null where `_json` writes the key).
    heads = pc.binary_join_element_wise("[", key_json, ",", "")
    added = _leaf_sums(heads, key_bytes, after, buckets)
    removed = _leaf_sums(heads, key_bytes, before, buckets)
    # Every key's bucket is in the result (0 if its leaves cancel or are absent), in the order
    # `bucket_deltas` first meets them.
    seen, first = np.unique(buckets, return_index=True)
    return {
        bucket: (added.get(bucket, 0) - removed.get(bucket, 0)) % MODULUS
        for bucket in seen[np.argsort(first)].tolist()
    }


# Printable ASCII without `"` or `\`: the text that `_json` writes between quotes as it is.
_QUOTABLE = r"^[ !#-\[\]-~]*$"
_LIMBS = 8  # a digest as 32-bit limbs


def _is_text(kind: pa.DataType) -> bool:
    return (
        pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind)
    )


def _array(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The column in one chunk; text as `pa.string()`, the type every kernel here takes."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    return column.cast(pa.string()) if _is_text(column.type) else column


def _plain_json(column: pa.Array) -> pa.Array:
    """`_json` of each value of an int64 or `pa.string()` column, written by Arrow; null where
    the value is null or is text that `_json` does not write as it is between quotes."""
    if pa.types.is_int64(column.type):
        return pc.cast(column, pa.string())  # the decimal digits, as `str` writes them
    quoted = pc.binary_join_element_wise('"', column, '"', "")  # null where the text is null
    plain = pc.match_substring_regex(column, _QUOTABLE)
    return quoted if not plain.false_count else pc.if_else(plain, quoted, None)


def _digests(texts: list[bytes]) -> bytes:
    """The SHA-256 digests of `texts`, concatenated; the loop is C's (no Python call per text)."""
    return b"".join(map(_digest, map(_sha256, texts)))


def _leaf_sums(
    heads: pa.Array, key_bytes: list[bytes], values: pa.Array, buckets: np.ndarray
) -> dict[int, int]:
    """Per bucket, the sum modulo 2**256 of the leaves of the rows whose value is present,
    from each row's `"[" + key JSON + ","` (null where Arrow did not write the key), `_json`
    of its key, value and bucket."""
    if pa.types.is_null(values.type) or values.null_count == len(values):
        return {}
    where = None  # which rows of the columns `values` keeps once the absent ones are dropped
    if values.null_count:
        present = values.is_valid()
        where = np.flatnonzero(present.to_numpy(zero_copy_only=False))
        values, heads, buckets = values.filter(present), heads.filter(present), buckets[where]
    # "[" key "," value "]", as `_leaf` writes it; null where `_json` must write key or value.
    row_json = pc.binary_join_element_wise(heads, _plain_json(values), "]", "")
    rows = row_json.cast(pa.binary()).to_pylist()
    if row_json.null_count:
        redo = np.flatnonzero(row_json.is_null().to_numpy(zero_copy_only=False))
        for j, value in zip(redo.tolist(), values.take(redo).to_pylist(), strict=True):
            key = key_bytes[j if where is None else where[j]]
            rows[j] = b"[" + key + b"," + _json(value) + b"]"
    # The leaves sorted by bucket (each digest moved as one 32-byte item, many times faster
    # than rows of limbs), as 32-bit limbs summed per bucket in uint64 (exact below 2**32
    # rows), then each limb's carry moved up; the top limb's is dropped: the modulo 2**256.
    order = np.argsort(buckets, kind="stable")
    ordered = buckets[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    leaves = np.frombuffer(_digests(rows), "V32")[order]
    limbs = leaves.view(">u4").reshape(-1, _LIMBS).astype(np.uint64)
    sums = np.add.reduceat(limbs, starts, axis=0)
    for i in range(_LIMBS - 1, 0, -1):
        sums[:, i - 1] += sums[:, i] >> np.uint64(32)
    packed = sums.astype(">u4").tobytes()  # each limb's low 32 bits
    width = 4 * _LIMBS
    return {
        bucket: int.from_bytes(packed[i * width : (i + 1) * width], "big")
        for i, bucket in enumerate(ordered[starts].tolist())
    }


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
