"""The batch hash is computed twice, by independent code: the commit writes it
(`store.commit.batch_row_hash`) and the audit recomputes it (`audit.proof.chain.batch_row_hash`).
Both must agree on every row the commit can write, or the audit would fail good ledgers; a
change to one side's format without the other fails here first."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ledger_engine.audit.proof import chain
from ledger_engine.store import commit

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
COUNT = st.integers(0, 2**62)
ROWS = st.fixed_dictionaries(
    {
        "batch_id": COUNT,
        "ledger": TEXT,
        "input_fingerprint": st.text("0123456789abcdef", min_size=64, max_size=64),
        "input_files": st.lists(TEXT, max_size=4),
        "events_ingested": COUNT,
        "applied": COUNT,
        "rejected": COUNT,
        "duplicates": COUNT,
        "changes": COUNT,
        "results": COUNT,
        "merkle_roots": st.dictionaries(
            TEXT, st.text("0123456789abcdef", min_size=64, max_size=64)
        ),
        "prev_hash": st.text("0123456789abcdef", min_size=64, max_size=64),
        "batch_hash": st.just("not hashed"),
    }
)


@given(ROWS)
def test_the_commit_and_the_audit_hash_a_batch_row_alike(row):
    assert chain.batch_row_hash(row) == commit.batch_row_hash(row)


def test_both_sides_hash_the_same_fields_from_the_same_genesis():
    assert chain.HASHED_FIELDS == commit.HASHED_FIELDS
    assert chain.GENESIS_HASH == commit.GENESIS_HASH


def test_every_hashed_field_changes_the_hash():
    row = {name: 1 for name in chain.HASHED_FIELDS}
    for name in chain.HASHED_FIELDS:
        assert chain.batch_row_hash(row | {name: 2}) != chain.batch_row_hash(row), name
