"""A micro-batch commits exactly once, in one transaction, and never over changed state."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, text

from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.core.ingest import event_to_line
from ledger_engine.core.records import Event
from ledger_engine.core.storable import MAX_ID_BYTES
from ledger_engine.errors import CommitRefused
from ledger_engine.pipeline.job import BatchProcessor, files_frame
from ledger_engine.store.commit import commit_staged
from ledger_engine.store.lease import run_lease
from tests.support.bank import deposit, lookup, transfer
from tests.support.events import event_file

LEDGER = build_ledger()


def files(*lines: Event | bytes, name: str = "events-000001.jsonl") -> list[tuple[str, bytes]]:
    """One file of `lines`: events, or raw lines (`bytes`) as they are."""
    return [(name, event_file(lines))]


@pytest.fixture
def commit(commit_files):
    """`commit(engine, batch_id, files)` on the bank ledger."""
    return commit_files


def table(engine: Engine, query: str) -> list[tuple]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(query))]


def test_a_batch_writes_state_log_results_rejections_and_its_batch_row(
    engine: Engine, commit
) -> None:
    withdrawal = Event("withdrawals", "w1", {"account_id": "alice"})  # no such stream
    batch = files(
        deposit("d1", "alice", 100, asset_amount=10),
        transfer("t1", "alice", "bob", 30),
        lookup("l1", "bob"),
        deposit("d1", "alice", 100, asset_amount=10),  # a retry: duplicate
        b"{not json",
        withdrawal,
    )
    summary = commit(engine, 0, batch)
    assert (summary.ingested, summary.applied, summary.rejected, summary.duplicates) == (6, 3, 2, 1)
    assert table(engine, "SELECT key, value FROM accounts ORDER BY key") == [
        ("alice", 70),
        ("bob", 30),
    ]
    assert table(
        engine,
        "SELECT position, table_name, key, before, after FROM ledger_change_log"
        " WHERE table_name = 'accounts' ORDER BY position, seq",
    ) == [
        (0, "accounts", "alice", None, 100),
        (1, "accounts", "alice", 100, 70),
        (1, "accounts", "bob", None, 30),
    ]
    assert table(
        engine,
        "SELECT request_id, payload->>'balance' FROM ledger_results"
        " WHERE stream = 'balance_lookups'",
    ) == [("l1", "30")]
    assert table(
        engine,
        "SELECT position, reason, convert_from(raw_input, 'UTF8')"
        " FROM ledger_rejections ORDER BY position",
    ) == [
        (4, "invalid_event", "{not json"),
        (5, "invalid_event", event_to_line(withdrawal)),
    ]
    assert table(engine, "SELECT request_id, kind FROM ledger_duplicates") == [("d1", "exists")]
    assert table(engine, "SELECT request_id, outcome FROM ledger_requests ORDER BY request_id") == [
        ("d1", "applied"),
        ("l1", "applied"),
        ("t1", "applied"),
        ("w1", "rejected"),
    ]
    assert table(
        engine,
        "SELECT batch_id, events_ingested, applied, rejected, duplicates FROM ledger_batches",
    ) == [(0, 6, 3, 2, 1)]


def test_replaying_a_committed_batch_changes_nothing(engine: Engine, commit) -> None:
    batch = files(deposit("d1", "alice", 100, asset_amount=10), transfer("t1", "alice", "bob", 30))
    assert commit(engine, 0, batch).committed
    before = table(engine, "SELECT * FROM ledger_change_log ORDER BY batch_id, position, seq")
    replay = commit(engine, 0, batch)
    assert not replay.committed
    assert (
        table(engine, "SELECT * FROM ledger_change_log ORDER BY batch_id, position, seq") == before
    )
    assert table(engine, "SELECT key, value FROM accounts ORDER BY key") == [
        ("alice", 70),
        ("bob", 30),
    ]
    assert table(engine, "SELECT count(*) FROM ledger_batches") == [(1,)]


def test_request_ids_of_earlier_batches_make_duplicates(engine: Engine, commit) -> None:
    commit(engine, 0, files(deposit("d1", "alice", 100, asset_amount=10)))
    summary = commit(
        engine,
        1,
        files(
            deposit("d1", "alice", 100, asset_amount=10),
            deposit("d1", "alice", 5),
            name="events-000002.jsonl",
        ),
    )
    assert (summary.applied, summary.duplicates) == (0, 2)
    assert table(engine, "SELECT kind FROM ledger_duplicates ORDER BY position") == [
        ("exists",),
        ("exists_with_different_payload",),
    ]
    assert table(engine, "SELECT value FROM accounts") == [(100,)]


def test_a_batch_id_reused_for_other_input_is_refused(engine: Engine, commit) -> None:
    commit(engine, 0, files(deposit("d1", "alice", 100, asset_amount=10)))
    with pytest.raises(CommitRefused, match="already committed with other input"):
        commit(engine, 0, files(deposit("d2", "alice", 100, asset_amount=10), name="other.jsonl"))


def test_batches_must_be_contiguous(engine: Engine, commit) -> None:
    with pytest.raises(CommitRefused, match="expected 0"):
        commit(engine, 3, files(deposit("d1", "alice", 100, asset_amount=10)))
    assert table(engine, "SELECT count(*) FROM ledger_events") == [(0,)]


# A rogue writer's statement between a batch's read and its commit, and the account the
# refusal must name: a row the batch updates changed or vanished, a row it creates appeared.
ROGUE_WRITES = {
    "changed": ("UPDATE accounts SET value = 1000 WHERE key = 'alice'", "alice"),
    "deleted": ("DELETE FROM accounts WHERE key = 'alice'", "alice"),
    "appeared": ("INSERT INTO accounts (key, value) VALUES ('carol', 5)", "carol"),
}


@pytest.mark.parametrize("rogue", sorted(ROGUE_WRITES))
def test_a_row_changed_behind_the_engine_refuses_the_commit(
    engine: Engine, commit, spark, rogue: str
) -> None:
    statement, culprit = ROGUE_WRITES[rogue]
    commit(engine, 0, files(deposit("d1", "alice", 100, asset_amount=10)))
    batch = files(
        transfer("t1", "alice", "bob", 30),
        deposit("d2", "carol", 7),
        name="events-000002.jsonl",
    )
    with run_lease(engine, "pytest") as lease:
        processor = BatchProcessor(spark, LEDGER, engine, lease)
        staged, profile = processor.stage(1, files_frame(spark, batch))
        assert staged is not None and profile is not None
        before = table(engine, "SELECT key, value FROM accounts ORDER BY key")
        with engine.begin() as conn:
            conn.execute(text(statement))
        after_rogue = table(engine, "SELECT key, value FROM accounts ORDER BY key")
        with pytest.raises(CommitRefused, match=f"accounts\\['{culprit}'\\].*changed behind"):
            commit_staged(engine, LEDGER, staged)
    assert before == [("alice", 100)]
    # Nothing of the refused batch is applied: only the rogue's write shows.
    assert table(engine, "SELECT count(*) FROM ledger_batches") == [(1,)]
    assert table(engine, "SELECT key, value FROM accounts ORDER BY key") == after_rogue


def test_hostile_values_are_stored_as_data(engine: Engine, commit) -> None:
    hostile = "'); DROP TABLE accounts; --"
    # The longest account id whose asset id (`asset-<id>`) a B-tree index entry is sure to hold.
    long_key = "x" * (MAX_ID_BYTES - len("asset-"))
    summary = commit(
        engine,
        0,
        files(
            deposit("r1", hostile, 10),
            deposit("r2", long_key, 10, asset=f"asset-{long_key}"),
            deposit("r3", "tab\tand\u0007bell", 10),
            deposit("r4\u0000nul", "a", 1, asset="b"),
            deposit("r5", long_key + "x", 10, asset=f"asset-{long_key}x"),
        ),
    )
    assert (summary.applied, summary.rejected) == (3, 2)
    keys = [k for (k,) in table(engine, "SELECT key FROM accounts")]
    assert sorted(keys) == sorted([hostile, long_key, "tab\tand\u0007bell"])
    assert table(engine, "SELECT request_id, reason FROM ledger_rejections ORDER BY position") == [
        (None, "invalid_event"),
        ("r5", "type_error"),
    ]
