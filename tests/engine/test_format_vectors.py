"""The stored formats pinned to literal test vectors: canonical JSON, the request fingerprint,
the Merkle leaf and bucket, a bucket's digest and a table's root.

Every other check of these formats compares two of the project's own implementations with each
other (the fast encoder with the reference one, the store's Merkle code with the audit's and
with the SQL functions of sql/0009_merkle_functions.sql, the engine's fingerprint with the
audit's stored-form one). Such a pair can agree and both be wrong, or both change together,
and nothing notices that every fingerprint and root already stored no longer verifies. Here
each expected value is a literal written in this file, worked out apart from the code it
checks: the JSON texts by hand from the definition (`canonical_json`: `json.dumps` with sorted
keys, no spaces, non-ASCII kept as is), the hashes with `hashlib.sha256` over the literal text
of the format the modules' docstrings define, and the roots by a sparse tree computation (the
tests under "The literals, derived here" redo that derivation with code of this file only).
Then every implementation, the store's, the audit's and PostgreSQL's, must give exactly the
literal.

The formats, as `ledger_engine.core.records` and `ledger_engine.store.merkle` define them:

* canonical JSON: `json.dumps(value, sort_keys=True, separators=(",", ":"),
  ensure_ascii=False)`: keys sorted by code point, no whitespace, `"` `\\` and the control
  characters escaped (`\\b \\f \\n \\r \\t`, the others as lowercase `\\u00XX`), everything
  else (`/`, DEL, U+2028, any non-ASCII) written as itself, in UTF-8 when hashed;
* an event's fingerprint: the hex SHA-256 of the canonical JSON of `[stream, payload]`;
* a row's leaf: SHA-256 of the canonical JSON of `[key, value]` as a 256-bit big-endian
  number; the key's bucket: the top 12 bits of the SHA-256 of the key's canonical JSON;
* a bucket's digest: the sum of its rows' leaves modulo 2**256;
* a table's root: the hex root of the complete binary tree over the 4,096 bucket digests in
  bucket order, each as 32 big-endian bytes (0 for an empty bucket), a node being
  `sha256(left || right)`.

If a literal here fails, a stored format changed: every fingerprint, digest and root already
committed would stop verifying. Change the literal only with a migration of what is stored.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pyarrow as pa
import pytest
from psycopg2 import sql
from sqlalchemy import Connection, text

from ledger_engine.audit.proof import merkle_tree
from ledger_engine.audit.proof.snapshots import table_digests
from ledger_engine.audit.rederivation.stored_form import StoredFormEvent, stored_fingerprint
from ledger_engine.core.admission import plain_fingerprint, screen
from ledger_engine.core.declarations import StreamingLedger, Table
from ledger_engine.core.records import Event, canonical_json, plain_canonical_bytes
from ledger_engine.core.storable import canonical_utf8, plain_json
from ledger_engine.store import merkle

# --- Canonical JSON ------------------------------------------------------------------------

# (value, its canonical JSON written out by hand, whether `plain_json` accepts it so that the
# fast encoder writes it too, whether jsonb holds it exactly so that PostgreSQL's
# `ledger_canonical_json` writes it too).
CANONICAL_JSON = {
    "nested objects and arrays, keys sorted at every level, empty ones kept": (
        {"b": [1, {"d": None, "c": True}], "a": {}, "": [], "A": [[]]},
        '{"":[],"A":[[]],"a":{},"b":[1,{"c":true,"d":null}]}',
        True,
        True,
    ),
    "integers at the int64 edges": (
        [-9223372036854775808, -1, 0, 9223372036854775807],
        "[-9223372036854775808,-1,0,9223372036854775807]",
        True,
        True,
    ),
    "booleans and null": (
        {"t": True, "f": False, "n": None},
        '{"f":false,"n":null,"t":true}',
        True,
        True,
    ),
    "a bare scalar": (-9223372036854775808, "-9223372036854775808", True, True),
    "the empty string": ("", '""', True, True),
    "quote, backslash and control characters escaped; slash and DEL as they are": (
        '"\\/\b\f\n\r\t\x01\x1f\x7f',
        r'"\"\\/\b\f\n\r\t\u0001\u001f' + "\x7f" + '"',
        True,
        True,
    ),
    "non-ASCII text written as itself, U+2028 included": (
        {"zoë": "café ☕ 😀\u2028"},
        '{"zoë":"café ☕ 😀\u2028"}',
        False,
        True,
    ),
    # U+FF5E before U+1F600: code point order (UTF-8 byte order too), not UTF-16's, which
    # would put the emoji's surrogates (U+D83D) first.
    "keys sorted by code point": (
        {"é": 1, "z": 2, "Z": 3, "😀": 4, "\uff5e": 5, "a": 6, "": 7},
        '{"":7,"Z":3,"a":6,"z":2,"é":1,"\uff5e":5,"😀":4}',
        False,
        True,
    ),
    # Payloads may hold floats (jsonb does not keep them as written: see
    # audit.rederivation.stored_form).
    "floats as Python's repr writes them": (
        [1.5, -0.0, 1e16, 0.1, 1e-07],
        "[1.5,-0.0,1e+16,0.1,1e-07]",
        False,
        False,
    ),
}


@pytest.mark.parametrize(
    ("value", "expected", "plain", "jsonb"), CANONICAL_JSON.values(), ids=list(CANONICAL_JSON)
)
def test_canonical_json_is_sorted_compact_json_with_non_ascii_kept(
    value: Any, expected: str, plain: bool, jsonb: bool
) -> None:
    assert canonical_json(value) == expected
    assert canonical_utf8(value) == expected.encode("utf-8")
    assert plain_json(value) is plain
    if plain:
        assert plain_canonical_bytes(value) == expected.encode("utf-8")


# --- Fingerprints --------------------------------------------------------------------------

# (event, the canonical JSON of [stream, payload] written out by hand, the SHA-256 of its
# UTF-8 bytes, whether the payload is plain JSON: then the fast fingerprint applies too).
FINGERPRINTS = {
    "a deposit": (
        Event("deposit", "d1", {"account": "alice", "amount": 100}),
        '["deposit",{"account":"alice","amount":100}]',
        "4cfaee25cbcc32f29a8eff28534a17bf45a156c9cc7015c8ed82d4f82f848a62",
        True,
    ),
    "non-ASCII text, escapes and int64's maximum": (
        Event(
            "transfer",
            "t1",
            {"from": "zoë", "to": "bob", "amount": 9223372036854775807, "memo": 'café "☕"\n'},
        ),
        '["transfer",{"amount":9223372036854775807,"from":"zoë","memo":"café \\"☕\\"\\n",'
        '"to":"bob"}]',
        "0aadac573616e06b51176aaf400a0364d101d7afba356ce3b2bbd8577ed23d6f",
        False,
    ),
    "a nested payload with int64's minimum, a boolean and null": (
        Event(
            "deposit", "d2", {"nested": {"b": [True, None], "a": -9223372036854775808}, "amount": 0}
        ),
        '["deposit",{"amount":0,"nested":{"a":-9223372036854775808,"b":[true,null]}}]',
        "bda48ae21330fc7a9bdd30b47bc6f1cb231da91f7890b0953067a966d8aa054f",
        True,
    ),
}


@pytest.mark.parametrize(
    ("event", "hashed", "expected", "plain"), FINGERPRINTS.values(), ids=list(FINGERPRINTS)
)
def test_a_fingerprint_is_the_sha256_of_the_canonical_json_of_stream_and_payload(
    event: Event, hashed: str, expected: str, plain: bool
) -> None:
    assert canonical_json([event.stream, event.payload]) == hashed
    assert event.fingerprint() == expected
    assert screen({}, event).fingerprint == expected  # the engine's admission
    if plain:
        assert plain_fingerprint(event) == expected
    # The audit's, from what the event log keeps of the event (the same for these events).
    assert stored_fingerprint(event) == expected
    assert StoredFormEvent(event.stream, event.request_id, event.payload).fingerprint() == expected


# --- Merkle leaves and buckets -------------------------------------------------------------

# (key, value, the key's canonical JSON and the row's `[key, value]` written out by hand, the
# key's bucket and the row's leaf).
LEAVES = {
    "a text key and an int value": (
        "alice",
        100,
        '"alice"',
        '["alice",100]',
        165,
        0xAB754ED898BC8AE27077DBB5C3B318C53C9FC5EECED6C799C173EF02A27C8BC2,
    ),
    "a non-ASCII key and int64's minimum": (
        "zoë",
        -9223372036854775808,
        '"zoë"',
        '["zoë",-9223372036854775808]',
        2896,
        0x02661A184C9B1AD7E08E34A4CA8B0FD6F378007A362885F9CFBD0A419B3A2B6C,
    ),
    "an int key and an object value": (
        7,
        {"memo": 'naïve "q"', "amount": 5, "tags": ["a", None, False]},
        "7",
        '[7,{"amount":5,"memo":"naïve \\"q\\"","tags":["a",null,false]}]',
        1936,
        0xCC2F1E4C25689B0C903B03B2DB4DBDAF20BC11D2FBDA8BC57064217963062ABF,
    ),
    "a key with escapes and a non-ASCII text value": (
        'tab\tkey "q"',
        "Grüße",
        '"tab\\tkey \\"q\\""',
        '["tab\\tkey \\"q\\"","Grüße"]',
        2084,
        0xC2E3ED9FA665CCD1F3CEC2475BF510DF4EC7745EC778CDAF7E65C12A238E9D5E,
    ),
}
LEAF_PARAMS = pytest.mark.parametrize(
    ("key", "value", "key_json", "row_json", "bucket", "leaf"), LEAVES.values(), ids=list(LEAVES)
)
MODULUS = 2**256


@LEAF_PARAMS
def test_a_leaf_is_the_sha256_of_the_canonical_json_of_key_and_value(
    key: Any, value: Any, key_json: str, row_json: str, bucket: int, leaf: int
) -> None:
    assert canonical_json(key) == key_json
    assert canonical_json([key, value]) == row_json
    assert merkle.leaf(key, value) == leaf
    assert merkle.bucket_of(key) == bucket
    assert merkle.change_delta(key, None, value) == (bucket, leaf)
    assert merkle.change_delta(key, value, None) == (bucket, MODULUS - leaf)
    assert merkle.bucket_deltas([(key, None, value)]) == {bucket: leaf}
    if not isinstance(value, dict):  # the columnar path takes int64 and string columns only
        columns = pa.array([key]), pa.nulls(1), pa.array([value])
        assert merkle.bucket_deltas_of_columns(*columns) == {bucket: leaf}


# --- Bucket digests and roots --------------------------------------------------------------

# The rows of the tables below, first n of them for a table of n rows. "acct-2018" falls in
# "alice"'s bucket (165), and their leaves' sum exceeds 2**256: the 5-row table's digest of
# bucket 165 is that sum less 2**256.
ROWS = [
    ("alice", 100),
    ("bob", -250),
    ("zoë", 9223372036854775807),
    ("carol", -9223372036854775808),
    ("acct-2018", 1),
]
# Each row's canonical JSON, written out by hand: the leaves summed into the digests below.
ROW_JSON = [
    '["alice",100]',
    '["bob",-250]',
    '["zoë",9223372036854775807]',
    '["carol",-9223372036854775808]',
    '["acct-2018",1]',
]
# (rows, bucket -> digest, root) of tables of 1, 2, 3 and 5 rows.
TABLES = {
    "1 row": (
        1,
        {165: 0xAB754ED898BC8AE27077DBB5C3B318C53C9FC5EECED6C799C173EF02A27C8BC2},
        "a56a7044d2dded0faebed492275d5b5f7fe9c2e0a38f523c145547c9b4e197f9",
    ),
    "2 rows": (
        2,
        {
            165: 0xAB754ED898BC8AE27077DBB5C3B318C53C9FC5EECED6C799C173EF02A27C8BC2,
            432: 0xE77A6FAA42B87FF87ADAE9859AD535371BBDCD2A5A25DBCF365E42C4687EDFA3,
        },
        "716f0188b96fc8455e0e4973a00495561fe9cb7e0068eb293786283acb6853e6",
    ),
    "3 rows": (
        3,
        {
            165: 0xAB754ED898BC8AE27077DBB5C3B318C53C9FC5EECED6C799C173EF02A27C8BC2,
            432: 0xE77A6FAA42B87FF87ADAE9859AD535371BBDCD2A5A25DBCF365E42C4687EDFA3,
            2896: 0x8AE0FAF41BA3A251CA745931CA6E2134C1AB0CD74ED4E47CFD3C896F31EA2BD0,
        },
        "ded3af0344bede84d0fb9a8024d491476409e8f823ac08a702ca19b8c3de565c",
    ),
    "5 rows, two in one bucket": (
        5,
        {
            165: 0x39836172DE70F84892E745B1CB4663A5A71901EBB20E9E353570DEE6F3B046CE,
            432: 0xE77A6FAA42B87FF87ADAE9859AD535371BBDCD2A5A25DBCF365E42C4687EDFA3,
            2234: 0x823DE424EFDEE2ADA093B209AE85635F84DB250629245B6E1E4644B82BD69F54,
            2896: 0x8AE0FAF41BA3A251CA745931CA6E2134C1AB0CD74ED4E47CFD3C896F31EA2BD0,
        },
        "0d0e38d3cef0bfb6eab0dbb193374870a3e6b79481f4de1864a0ccdc1c991c4b",
    ),
}
TABLE_PARAMS = pytest.mark.parametrize(
    ("count", "digests", "root"), TABLES.values(), ids=list(TABLES)
)
# The root of a table with no rows: every bucket's digest 0.
EMPTY_ROOT = "b7d05f875f140027ef5118a2247bbb84ce8f2f0f1123623085daf7960c329f5f"


@TABLE_PARAMS
def test_the_store_sums_leaves_per_bucket_and_hashes_4096_buckets_to_the_root(
    count: int, digests: dict[int, int], root: str
) -> None:
    rows = ROWS[:count]
    assert merkle.digests_of(rows) == digests
    assert merkle.root_of(digests) == root
    # As a commit keeps it: the deltas of the rows' insertion added to an empty table's.
    kept: dict[int, int] = {}
    merkle.add_deltas(kept, merkle.bucket_deltas((k, None, v) for k, v in rows).items())
    assert kept == digests
    columns = pa.array([k for k, _ in rows]), pa.nulls(count), pa.array([v for _, v in rows])
    assert merkle.bucket_deltas_of_columns(*columns) == digests


@TABLE_PARAMS
def test_the_audit_hashes_the_same_digests_to_the_same_root(
    count: int, digests: dict[int, int], root: str
) -> None:
    assert merkle_tree.tree_root(digests) == root


def test_the_root_of_an_empty_table_is_the_tree_of_4096_zero_digests() -> None:
    assert merkle.EMPTY_ROOT == merkle.root_of({}) == EMPTY_ROOT
    assert merkle_tree.ROOT_OF_NOTHING == merkle_tree.tree_root({}) == EMPTY_ROOT


# --- The literals, derived here from the definitions alone ---------------------------------


def test_the_literals_follow_from_the_documented_formats() -> None:
    """Each hash literal is sha256 of the literal text beside it, computed here with no code
    of the project: the literals were not copied from what the code under test prints."""
    for _, hashed, fingerprint, _ in FINGERPRINTS.values():
        assert hashlib.sha256(hashed.encode("utf-8")).hexdigest() == fingerprint
    for _, _, key_json, row_json, bucket, leaf in LEAVES.values():
        assert _sha256_int(row_json) == leaf
        assert _sha256_int(key_json) >> (256 - 12) == bucket


def test_the_digest_literals_are_the_leaves_summed_modulo_2_256() -> None:
    for count, digests, _ in TABLES.values():
        summed: dict[int, int] = {}
        for row_json in ROW_JSON[:count]:
            key_json = row_json[1 : row_json.rindex(",")]
            bucket = _sha256_int(key_json) >> (256 - 12)
            summed[bucket] = (summed.get(bucket, 0) + _sha256_int(row_json)) % MODULUS
        assert summed == digests
    # The sum in bucket 165 of the 5-row table wraps around 2**256.
    assert _sha256_int(ROW_JSON[0]) + _sha256_int(ROW_JSON[4]) >= MODULUS


def test_the_root_literals_are_the_tree_computed_sparsely() -> None:
    """The roots by another method than either implementation's: only the subtrees holding a
    nonzero digest are hashed, every other subtree of height h is the precomputed root of h
    levels of zeros."""
    for _, digests, root in TABLES.values():
        assert _sparse_root(digests) == root
    assert _sparse_root({}) == EMPTY_ROOT


def _sha256_int(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest(), "big")


def _sparse_root(digests: dict[int, int]) -> str:
    zeros = [bytes(32)]  # zeros[h]: the root of a subtree of height h with every digest 0
    for _ in range(12):
        zeros.append(hashlib.sha256(zeros[-1] + zeros[-1]).digest())

    def node(height: int, first: int) -> bytes:
        inside = [b for b in digests if first <= b < first + 2**height]
        if not inside:
            return zeros[height]
        if height == 0:
            return digests[first].to_bytes(32, "big")
        half = 2 ** (height - 1)
        return hashlib.sha256(node(height - 1, first) + node(height - 1, first + half)).digest()

    return node(12, 0).hex()


# --- PostgreSQL: sql/0009_merkle_functions.sql and the audit's digests ---------------------


# `conn`, a connection to the module's database, is tests/conftest.py's.

SQL_TYPES = {str: "text", int: "bigint", dict: "jsonb"}


def sql_table(conn: Connection, name: str, rows: list[tuple[Any, Any]]) -> Table:
    """A declared table `name` of the types of `rows`' first key and value, created in
    PostgreSQL with those rows (an object value given as non-canonical JSON text)."""
    key_type, value_type = type(rows[0][0]), type(rows[0][1])
    table = StreamingLedger("format_vectors").declare_state(name, key_type, value_type)
    cursor = conn.connection.cursor()
    cursor.execute(
        sql.SQL("CREATE TABLE {} (key {} PRIMARY KEY, value {})").format(
            sql.Identifier(table.sql_name),
            sql.SQL(SQL_TYPES[key_type]),
            sql.SQL(SQL_TYPES[value_type]),
        )
    )
    for key, value in rows:
        if value_type is dict:
            value = json.dumps(value, indent=1)
        cursor.execute(
            sql.SQL("INSERT INTO {} VALUES (%s, %s)").format(sql.Identifier(table.sql_name)),
            (key, value),
        )
    return table


@pytest.mark.parametrize(
    ("value", "expected"),
    [(value, expected) for value, expected, _, jsonb in CANONICAL_JSON.values() if jsonb],
    ids=[name for name, vector in CANONICAL_JSON.items() if vector[3]],
)
def test_postgresql_writes_a_jsonb_value_in_the_same_canonical_json(
    conn: Connection, value: Any, expected: str
) -> None:
    # Given as JSON text of another form: unsorted, indented, non-ASCII as \u escapes.
    written = conn.execute(
        text("SELECT ledger_canonical_json(CAST(:v AS jsonb))"),
        {"v": json.dumps(value, indent=1, ensure_ascii=True)},
    ).scalar()
    assert written == expected


@LEAF_PARAMS
def test_postgresql_hashes_a_row_to_the_same_leaf_and_bucket(
    conn: Connection, key: Any, value: Any, key_json: str, row_json: str, bucket: int, leaf: int
) -> None:
    value_json = row_json[len(key_json) + 2 : -1]
    found_bucket, found_leaf = conn.execute(
        text("SELECT ledger_merkle_bucket(:k), ledger_merkle_leaf(:k, :v)"),
        {"k": key_json, "v": value_json},
    ).one()
    assert (found_bucket, int.from_bytes(bytes(found_leaf), "big")) == (bucket, leaf)
    # As the audit derives the JSON from a table's typed columns: a table of this one row.
    with conn.begin_nested():
        table = sql_table(conn, f"leaf_vector_{bucket}", [(key, value)])
        assert table_digests(conn, table) == {bucket: leaf}


@TABLE_PARAMS
def test_the_audit_recomputes_the_same_digests_and_root_in_postgresql(
    conn: Connection, count: int, digests: dict[int, int], root: str
) -> None:
    with conn.begin_nested():
        table = sql_table(conn, f"root_vector_{count}", ROWS[:count])
        found = table_digests(conn, table)
    assert found == digests
    assert merkle_tree.tree_root(found) == root
