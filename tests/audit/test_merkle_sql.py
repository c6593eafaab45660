"""The SQL functions of sql/0009 hash exactly what the Python Merkle code hashes, so that a tree
recomputed inside PostgreSQL can be compared with the one the engine keeps."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, text

from ledger_engine.audit.proof.snapshots import table_digests
from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.core.records import canonical_json
from ledger_engine.store.merkle import bucket_of, digests_of, leaf

# PostgreSQL text holds no NUL and no lone surrogate; everything else is fair game.
pg_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"))
int64 = st.integers(-(2**63), 2**63 - 1)
json_values = st.recursive(
    st.none() | st.booleans() | int64 | pg_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(pg_text, inner, max_size=3),
    max_leaves=8,
)

EXAMPLES = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


# `conn`, a connection to the module's database, is tests/conftest.py's.


def sql_bucket_and_leaf(conn: Any, key_json: str, value_json: str) -> tuple[int, int]:
    bucket, digest = conn.execute(
        text("SELECT ledger_merkle_bucket(:k), ledger_merkle_leaf(:k, :v)"),
        {"k": key_json, "v": value_json},
    ).one()
    return bucket, int.from_bytes(bytes(digest), "big")


@EXAMPLES
@given(key=pg_text | int64, value=int64 | pg_text)
def test_scalar_keys_and_values_hash_alike(conn: Any, key: Any, value: Any) -> None:
    key_json, value_json = conn.execute(
        text("SELECT to_json(CAST(:k AS text))::text, to_json(CAST(:v AS text))::text"),
        {"k": key, "v": value},
    ).one()
    if isinstance(key, int):
        key_json = str(key)
    if isinstance(value, int):
        value_json = str(value)
    assert sql_bucket_and_leaf(conn, key_json, value_json) == (bucket_of(key), leaf(key, value))


@EXAMPLES
@given(value=st.dictionaries(pg_text, json_values, max_size=4))
def test_jsonb_values_are_written_in_canonical_json(conn: Any, value: dict) -> None:
    written = conn.execute(
        text("SELECT ledger_canonical_json(CAST(:v AS jsonb))"), {"v": json.dumps(value)}
    ).scalar()
    assert written == canonical_json(value)


def test_a_tables_digests_computed_in_sql_equal_the_python_ones(engine: Engine) -> None:
    ledger = StreamingLedger("merkle_sql")
    rows_table = ledger.declare_state("merkle_rows", key_type=str, value_type=int)
    rows = [(f"acct-{i:05d}", i * 7 - 900) for i in range(3_000)] + [('é\n"', -(2**63))]
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE merkle_rows (key text PRIMARY KEY, value bigint)"))
        connection.execute(
            text("INSERT INTO merkle_rows VALUES (:k, :v)"), [{"k": k, "v": v} for k, v in rows]
        )
    with engine.connect() as connection:
        assert table_digests(connection, rows_table) == digests_of(rows)
        some = sorted(digests_of(rows))[:5]
        assert table_digests(connection, rows_table, some) == {
            b: d for b, d in digests_of(rows).items() if b in some
        }
