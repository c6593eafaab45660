"""The Merkle snapshot audit recomputes roots and the batch chain from PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, text

from ledger_engine.apps.bank import build_ledger
from ledger_engine.apps.bank_events import event_to_line, generate_events
from ledger_engine.audit.merkle import (
    EMPTY_ROOT,
    add_deltas,
    bucket_of,
    change_delta,
    digests_of,
    root_of,
)
from ledger_engine.audit.snapshots import verify_snapshots

LEDGER = build_ledger()


@pytest.fixture
def ledger_db(engine: Engine, commit_files) -> Engine:
    """A database holding two committed batches of a generated bank workload."""
    events = generate_events(600, accounts=40, seed=8)
    for batch_id, part in enumerate((events[:300], events[300:])):
        content = "".join(event_to_line(e) + "\n" for e in part).encode()
        commit_files(engine, batch_id, [(f"f{batch_id}.jsonl", content)])
    return engine


def failed(engine: Engine) -> dict[str, tuple[str, ...]]:
    return {c.name: c.findings for c in verify_snapshots(engine, LEDGER) if not c.passed}


def tamper(engine: Engine, statement: str) -> None:
    with engine.begin() as conn:
        conn.execute(text(statement))


def test_the_root_depends_on_every_row_but_not_on_their_order() -> None:
    rows = [("a", 1), ("b", 2), ("c", 3)]
    assert root_of(digests_of(rows)) == root_of(digests_of(reversed(rows)))
    assert root_of(digests_of(rows)) != root_of(digests_of([("a", 1), ("b", 2), ("c", 4)]))
    assert root_of(digests_of(rows)) != root_of(digests_of(rows[:2]))
    assert root_of(digests_of([("a", 1)])) != root_of(digests_of([("a", "1")]))
    assert root_of({}) == EMPTY_ROOT == root_of(digests_of([]))


def test_changes_update_the_digests_without_reading_the_other_rows() -> None:
    before = {f"k{i}": i for i in range(200)}
    after = dict(before, k3=-3, k150=0, new=7)
    del after["k9"]
    digests = digests_of(before.items())
    add_deltas(
        digests,
        [change_delta(key, before.get(key), after.get(key)) for key in ("k3", "k150", "new", "k9")],
    )
    assert root_of(digests) == root_of(digests_of(after.items()))


def test_keys_spread_over_buckets() -> None:
    buckets = {bucket_of(f"acct-{i:06d}") for i in range(10_000)}
    assert len(buckets) > 3_500  # of 4096


def test_an_untouched_ledger_passes(ledger_db: Engine) -> None:
    checks = verify_snapshots(ledger_db, LEDGER)
    assert [c.name for c in checks] == [
        "batch hash chain",
        "merkle root of accounts",
        "merkle root of asset_ledger",
    ]
    assert all(c.passed for c in checks)


def test_a_balance_changed_behind_the_engine_fails_that_tables_root(ledger_db: Engine) -> None:
    tamper(ledger_db, "UPDATE accounts SET value = value + 1 WHERE key = 'acct-000007'")
    assert list(failed(ledger_db)) == ["merkle root of accounts"]


def test_a_deleted_row_fails_that_tables_root(ledger_db: Engine) -> None:
    tamper(ledger_db, "DELETE FROM asset_ledger WHERE key = 'asset-000003'")
    assert list(failed(ledger_db)) == ["merkle root of asset_ledger"]


def test_an_altered_batch_count_breaks_the_chain_at_that_batch(ledger_db: Engine) -> None:
    tamper(
        ledger_db,
        "UPDATE ledger_batches SET applied = applied - 1,"
        " rejected = rejected + 1 WHERE batch_id = 0",
    )
    findings = failed(ledger_db)["batch hash chain"]
    assert findings == ("batch 0: its fields do not hash to its recorded batch_hash",)


def test_swapped_batch_hashes_break_the_chain(ledger_db: Engine) -> None:
    tamper(ledger_db, "UPDATE ledger_batches SET batch_hash = 'x' || batch_hash")
    tamper(
        ledger_db,
        "UPDATE ledger_batches SET batch_hash = CASE batch_id"
        " WHEN 0 THEN (SELECT substr(batch_hash, 2) FROM ledger_batches WHERE batch_id = 1)"
        " ELSE (SELECT substr(batch_hash, 2) FROM ledger_batches WHERE batch_id = 0) END",
    )
    findings = failed(ledger_db)["batch hash chain"]
    assert "batch 0: its fields do not hash to its recorded batch_hash" in findings
    assert "batch 1: prev_hash does not match the hash of the batch before" in findings
