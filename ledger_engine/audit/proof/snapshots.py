"""The Merkle snapshot audit: recompute every table's tree inside PostgreSQL, compare it with
the tree the engine recorded, and, where they differ, descend to the keys that differ.

The engine keeps each table's bucket digests in `ledger_merkle_buckets` and records every
table's root in each batch row (`ledger_engine.store.commit`). The audit:

1. recomputes the bucket digests from the table with the SQL functions of
   `sql/0009_merkle_functions.sql` (one pass over the table, grouped by bucket; only the
   4,096 per-bucket sums come back to Python, never the rows);
2. checks that the recorded bucket digests hash to the root recorded in the last batch row
   (so `ledger_merkle_buckets` itself cannot be edited unnoticed: the roots are in the hash
   chain of batch rows, see `ledger_engine.audit.proof.chain`);
3. on a mismatch, descends the two trees from the root, following only the children that
   differ, to the buckets that differ;
4. reads those buckets' rows from the table and, in one pass over the change log, the rows it
   says they must hold (the `after` of each key's last change), checks that the change log's
   rows in each such bucket add up to the recorded digest (then they *are* the recorded rows),
   and lists every key whose value differs, with the recorded and the found value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from psycopg2 import sql
from sqlalchemy import Connection, Engine, text

from ledger_engine.audit.findings import CheckResult
from ledger_engine.audit.proof.merkle_tree import (
    BUCKET_COUNT,
    DIGEST_MODULUS,
    ROOT_OF_NOTHING,
    tree_levels,
)
from ledger_engine.audit.sql_files import audit_query, composable
from ledger_engine.core.declarations import StreamingLedger, Table
from ledger_engine.core.records import canonical_json

SUITE = "merkle"
MAX_KEYS = 20  # differing keys listed per table; the findings say how many more
MAX_BUCKETS = 64  # differing buckets read back row by row; beyond that only counted

# Per declared type, the SQL expression of a column's canonical JSON (`canonical_json` of the
# Python value it holds). Fixed fragments, chosen by type, never built from data.
_KEY_JSON = {str: sql.SQL("to_json(key)::text"), int: sql.SQL("key::text")}
_VALUE_JSON = {
    int: sql.SQL("value::text"),
    str: sql.SQL("to_json(value)::text"),
    dict: sql.SQL("ledger_canonical_json(value)"),
}
# The change log holds keys as text (`key_text`) and values as jsonb, whatever the table.
_LOG_KEY_JSON = {str: sql.SQL("to_json(key)::text"), int: sql.SQL("key")}


# The statements composed here, read once (the files say what each returns).
_BUCKET_SUMS = composable("snapshots_bucket_sums")
_BUCKET_FILTER = composable("snapshots_bucket_filter")
_TABLE_ROWS = composable("snapshots_table_rows")
_RECORDED_ROWS = composable("snapshots_recorded_rows")
_ROWS_IN_BUCKETS = composable("snapshots_rows_in_buckets")
_LAST_CHANGES = composable("snapshots_last_changes")
_RECORDED_DIGESTS = text(audit_query("snapshots_recorded_digests"))
_NEWEST_ROOTS = text(audit_query("snapshots_newest_roots"))


@dataclass(frozen=True)
class KeyDifference:
    """A key whose value in the table is not the value the engine recorded."""

    table: str
    key: Any
    recorded: Any  # None: the key has no row in the recorded snapshot
    found: Any  # None: the table has no row for the key

    def describe(self) -> str:
        return (
            f"table {self.table}, key {canonical_json(self.key)}: "
            f"recorded {_shown(self.recorded)}, found {_shown(self.found)}"
        )


def _shown(value: Any) -> str:
    return "no row" if value is None else canonical_json(value)


# --- Digests, in SQL -----------------------------------------------------------------------


def table_digests(conn: Connection, table: Table, buckets: Iterable[int] | None = None) -> dict:
    """The bucket digests of `table` as it is now (bucket -> digest; zero digests left out),
    computed inside PostgreSQL; with `buckets`, only those buckets."""
    rows = _TABLE_ROWS.format(
        key_json=_KEY_JSON[table.key_type],
        value_json=_VALUE_JSON[table.value_type],
        table=sql.Identifier(table.sql_name),
    )
    return bucket_digests(conn, rows, buckets)


def bucket_digests(
    conn: Connection,
    rows: sql.Composable,
    buckets: Iterable[int] | None = None,
    params: tuple = (),
) -> dict[int, int]:
    """The bucket digests (bucket -> digest; zero digests left out) of the `(key_json,
    value_json)` rows that the query `rows` returns (`params` are its bound parameters),
    summed inside PostgreSQL; with `buckets`, only those buckets."""
    where = sql.SQL("")
    if buckets is not None:
        where = _BUCKET_FILTER
        params = (*params, sorted(buckets))
    cursor = conn.connection.cursor()
    cursor.execute(_BUCKET_SUMS.format(rows=rows, where=where), params)
    digests: dict[int, int] = {}
    for bucket, *word_sums in cursor.fetchall():
        digest = digest_of_word_sums(word_sums)
        if digest:
            digests[bucket] = digest
    return digests


def digest_of_word_sums(word_sums: Sequence[Any]) -> int:
    """A bucket's digest from the sums of its leaves' four 64-bit words, as `_BUCKET_SUMS`
    gives them: (sum, count of negative words) per word, most significant first; a NULL sum
    (no leaves) counts as 0."""
    digest = 0
    for word in range(4):
        total, negatives = word_sums[2 * word], word_sums[2 * word + 1]
        # Each word was read as a signed 64-bit integer: add 2^64 back per negative one.
        unsigned = int(total or 0) + (negatives << 64)
        digest += unsigned << (64 * (3 - word))
    return digest % DIGEST_MODULUS


def recorded_digests(conn: Connection, table_name: str) -> dict[int, int]:
    """The bucket digests the engine recorded for a table (`ledger_merkle_buckets`)."""
    return {
        bucket: int(digest, 16)
        for bucket, digest in conn.execute(_RECORDED_DIGESTS, {"name": table_name})
    }


# --- The tree and its descent --------------------------------------------------------------


def differing_buckets(recorded: list[list[bytes]], found: list[list[bytes]]) -> list[int]:
    """The buckets where two trees differ, found by descending from the root into the
    children that differ only."""
    frontier = [0] if recorded[-1][0] != found[-1][0] else []
    for depth in range(len(recorded) - 2, -1, -1):
        frontier = [
            child
            for node in frontier
            for child in (2 * node, 2 * node + 1)
            if recorded[depth][child] != found[depth][child]
        ]
    return frontier


# --- The audit -----------------------------------------------------------------------------


def verify_snapshots(engine: Engine, ledger: StreamingLedger) -> list[CheckResult]:
    """One check per table: its tree recomputed from PostgreSQL equals the recorded one."""
    with engine.connect() as conn:
        last = conn.execute(_NEWEST_ROOTS).first()
        return [
            _table_check(conn, table, last.batch_id if last else None, last and last.merkle_roots)
            for _, table in sorted(ledger.tables.items())
        ]


def _table_check(
    conn: Connection, table: Table, last_batch: int | None, roots: Mapping[str, str] | None
) -> CheckResult:
    name = f"merkle root of {table.name}"
    found = tree_levels(table_digests(conn, table))
    found_root = found[-1][0].hex()
    if last_batch is None:  # nothing committed: the table must be empty
        findings = [] if found_root == ROOT_OF_NOTHING else ["rows exist but no batch"]
        return CheckResult(SUITE, name, not findings, tuple(findings))
    assert roots is not None
    recorded_root = roots.get(table.name)
    stored, recorded, findings = recorded_tree(conn, table.name, last_batch, recorded_root)
    if found_root != recorded_root or findings:
        buckets = differing_buckets(recorded, found)
        findings.insert(
            0,
            f"table {table.name}: root recorded in batch {last_batch} is {recorded_root}, "
            f"recomputed {found_root}; {len(buckets)} of {BUCKET_COUNT} buckets differ",
        )
        findings.extend(_key_findings(conn, table, buckets, stored))
    return CheckResult(SUITE, name, not findings, tuple(findings))


def recorded_tree(
    conn: Connection, table_name: str, last_batch: int, recorded_root: str | None
) -> tuple[dict[int, int], list[list[bytes]], list[str]]:
    """The bucket digests the engine keeps for a table, their tree, and a finding if they do
    not hash to the root recorded in batch `last_batch` (the newest batch row's root, which
    the hash chain proves): a constant cost, 4,096 digests per table."""
    stored = recorded_digests(conn, table_name)
    recorded = tree_levels(stored)
    findings: list[str] = []
    if recorded[-1][0].hex() != recorded_root:
        findings.append(
            f"table {table_name}: the stored bucket digests (ledger_merkle_buckets) do not "
            f"hash to the root recorded in batch {last_batch}: they were altered"
        )
    return stored, recorded, findings


def _key_findings(
    conn: Connection, table: Table, buckets: list[int], stored: Mapping[int, int]
) -> list[str]:
    """The keys of the differing buckets whose values differ from the recorded ones."""
    if not buckets:
        return []
    read = buckets[:MAX_BUCKETS]
    findings: list[str] = []
    recorded, log_digests = recorded_rows(conn, table, read)
    untrusted = [b for b in read if log_digests.get(b, 0) != stored.get(b, 0)]
    if untrusted:
        findings.append(
            f"table {table.name}: the change log does not add up to the recorded digest of "
            f"bucket(s) {', '.join(map(str, untrusted[:10]))}: it was altered too; "
            "recorded values below are the change log's"
        )
    differences = key_differences(conn, table, read, recorded)
    findings.extend(d.describe() for d in differences[:MAX_KEYS])
    if len(differences) > MAX_KEYS:
        findings.append(f"table {table.name}: {len(differences) - MAX_KEYS} more keys differ")
    if len(buckets) > len(read):
        findings.append(
            f"table {table.name}: {len(buckets) - len(read)} more buckets differ, not read"
        )
    return findings


def recorded_rows(
    conn: Connection, table: Table, buckets: list[int]
) -> tuple[dict[Any, Any], dict[int, int]]:
    """The rows the change log says `buckets` of `table` hold (each key's last `after`,
    deleted keys left out), and those buckets' digests (bucket -> digest; 0 left out), read in
    one pass over the change log. Only differing buckets are read, so their few leaves are
    summed here."""
    cursor = conn.connection.cursor()
    cursor.execute(_RECORDED_ROWS.format(last_changes=_last_changes(table)), (buckets,))
    rows: dict[Any, Any] = {}
    digests: dict[int, int] = {}
    for key, bucket, after, leaf in cursor.fetchall():
        rows[_typed_key(table, key)] = after
        digests[bucket] = (digests.get(bucket, 0) + int.from_bytes(leaf, "big")) % DIGEST_MODULUS
    return rows, {b: d for b, d in digests.items() if d}


def key_differences(
    conn: Connection, table: Table, buckets: list[int], recorded: Mapping[Any, Any]
) -> list[KeyDifference]:
    """Keys in `buckets` whose row in the table differs from its `recorded` value."""
    cursor = conn.connection.cursor()
    cursor.execute(
        _ROWS_IN_BUCKETS.format(
            table=sql.Identifier(table.sql_name), key_json=_KEY_JSON[table.key_type]
        ),
        (buckets,),
    )
    found = {_typed_key(table, key): value for key, value in cursor.fetchall()}
    keys = sorted(set(found) | set(recorded), key=lambda k: canonical_json(k).encode())
    return [
        KeyDifference(table.name, k, recorded.get(k), found.get(k))
        for k in keys
        if recorded.get(k) != found.get(k)
    ]


def log_key_json(table: Table) -> sql.Composable:
    """The SQL expression of a change-log row's key as canonical JSON, for `table`'s keys."""
    return _LOG_KEY_JSON[table.key_type]


def _last_changes(table: Table) -> sql.Composable:
    return _LAST_CHANGES.format(
        key_json=_LOG_KEY_JSON[table.key_type], table_name=sql.Literal(table.name)
    )


def _typed_key(table: Table, key: Any) -> Any:
    return int(key) if table.key_type is int else key
