"""`ledger verify` recomputes every table's Merkle tree inside PostgreSQL and the batch hash
chain, and says exactly where the system of record differs from what the engine recorded."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import Engine, text

from ledger_engine.apps.bank.generator import generate_events
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.audit.proof.snapshots import differing_buckets
from ledger_engine.audit.proof.verify import verify_ledger
from ledger_engine.cli import main
from ledger_engine.core.ingest import event_to_line
from ledger_engine.store.database import connect
from ledger_engine.store.merkle import (
    EMPTY_ROOT,
    add_deltas,
    bucket_of,
    change_delta,
    digests_of,
    root_of,
    tree_levels,
)
from tests.support.checks import failures

LEDGER = build_ledger()


@pytest.fixture(scope="module")
def generated_ledger_url(module_database_url: str, commit_files) -> str:
    """A database holding two committed batches of a generated bank workload, to be copied
    (`CREATE DATABASE ... TEMPLATE`) by each test rather than committed again."""
    engine = connect(module_database_url)
    try:
        events = generate_events(600, accounts=40, seed=8)
        for batch_id, part in enumerate((events[:300], events[300:])):
            content = "".join(event_to_line(e) + "\n" for e in part).encode()
            commit_files(engine, batch_id, [(f"f{batch_id}.jsonl", content)])
    finally:
        engine.dispose()
    return module_database_url


@pytest.fixture
def ledger_db(generated_ledger_url: str, make_database_url: Callable[..., str]) -> Iterator[Engine]:
    """A copy of the generated ledger, for this test to tamper with."""
    engine = connect(make_database_url(template=generated_ledger_url))
    yield engine
    engine.dispose()


def failed(engine: Engine) -> dict[str, tuple[str, ...]]:
    return failures(verify_ledger(engine, LEDGER))


def tamper(engine: Engine, statement: str, **params: object) -> None:
    with engine.begin() as conn:
        conn.execute(text(statement), params)


def value_of(engine: Engine, table: str, key: str) -> int:
    with engine.connect() as conn:
        return conn.execute(
            text(f"SELECT value FROM {table} WHERE key = :key"), {"key": key}
        ).scalar_one()


# --- The tree ------------------------------------------------------------------------------


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


def test_the_descent_reaches_exactly_the_buckets_that_differ() -> None:
    rows = {f"k{i}": i for i in range(500)}
    changed = dict(rows, k7=-1, k400=-1)
    recorded, found = (
        tree_levels(digests_of(rows.items())),
        tree_levels(digests_of(changed.items())),
    )
    assert recorded[-1][0].hex() == root_of(digests_of(rows.items()))
    assert differing_buckets(recorded, found) == sorted({bucket_of("k7"), bucket_of("k400")})
    assert differing_buckets(recorded, recorded) == []


# --- The audit over a committed ledger -----------------------------------------------------


def test_an_untouched_ledger_passes(ledger_db: Engine) -> None:
    checks = verify_ledger(ledger_db, LEDGER)
    assert [c.name for c in checks] == [
        "batch hash chain",
        "merkle root of accounts",
        "merkle root of asset_ledger",
        "batch counts equal the rows they describe",
        *LEDGER.invariants,  # the bank's declared rules, in declaration order
    ]
    assert [c.findings for c in checks if not c.passed] == []


def test_a_changed_balance_is_named_with_its_recorded_and_found_value(ledger_db: Engine) -> None:
    recorded = value_of(ledger_db, "accounts", "acct-000007")
    tamper(ledger_db, "UPDATE accounts SET value = value + 1 WHERE key = 'acct-000007'")
    findings = failed(ledger_db)
    # The money the update made from nothing breaks the bank's declared conservation too.
    assert list(findings) == [
        "merkle root of accounts",
        "accounts total equals applied deposits and adjustments",
    ]
    [conservation] = findings["accounts total equals applied deposits and adjustments"]
    assert conservation.endswith("difference 0.01 EUR")  # in the accounts' unit, EUR/2
    assert "1 of 4096 buckets differ" in findings["merkle root of accounts"][0]
    assert findings["merkle root of accounts"][1:] == (
        f'table accounts, key "acct-000007": recorded {recorded}, found {recorded + 1}',
    )


def test_a_deleted_and_an_inserted_row_are_named(ledger_db: Engine) -> None:
    recorded = value_of(ledger_db, "asset_ledger", "asset-000003")
    tamper(ledger_db, "DELETE FROM asset_ledger WHERE key = 'asset-000003'")
    tamper(ledger_db, "INSERT INTO asset_ledger VALUES ('asset-forged', 1000)")
    findings = failed(ledger_db)["merkle root of asset_ledger"]
    assert "2 of 4096 buckets differ" in findings[0]
    assert set(findings[1:]) == {
        f'table asset_ledger, key "asset-000003": recorded {recorded}, found no row',
        'table asset_ledger, key "asset-forged": recorded no row, found 1000',
    }


def test_a_balance_changed_with_its_change_log_is_caught_by_the_recorded_digest(
    ledger_db: Engine,
) -> None:
    # The table and the change log agree with each other, not with what the engine recorded.
    tamper(ledger_db, "UPDATE accounts SET value = value + 5 WHERE key = 'acct-000004'")
    tamper(
        ledger_db,
        "UPDATE ledger_change_log SET after = to_jsonb((after #>> '{}')::bigint + 5)"
        " WHERE (batch_id, position, seq) = (SELECT batch_id, position, seq"
        " FROM ledger_change_log WHERE table_name = 'accounts' AND key = 'acct-000004'"
        " ORDER BY batch_id DESC, position DESC, seq DESC LIMIT 1)",
    )
    findings = failed(ledger_db)
    assert list(findings) == [
        "merkle root of accounts",
        "accounts total equals applied deposits and adjustments",
    ]
    assert "1 of 4096 buckets differ" in findings["merkle root of accounts"][0]
    assert findings["merkle root of accounts"][1] == (
        f"table accounts: the change log does not add up to the recorded digest of "
        f"bucket(s) {bucket_of('acct-000004')}: it was altered too; recorded values below are "
        "the change log's"
    )


def test_altered_bucket_digests_are_caught_by_the_recorded_root(ledger_db: Engine) -> None:
    tamper(
        ledger_db,
        "UPDATE ledger_merkle_buckets SET digest = repeat('0', 64)"
        " WHERE table_name = 'accounts' AND bucket = (SELECT min(bucket)"
        " FROM ledger_merkle_buckets WHERE table_name = 'accounts')",
    )
    findings = failed(ledger_db)
    assert list(findings) == ["merkle root of accounts"]
    assert any(
        "do not hash to the root recorded in batch 1" in f
        for f in findings["merkle root of accounts"]
    )


def test_an_altered_batch_count_is_the_first_broken_link(ledger_db: Engine) -> None:
    tamper(ledger_db, "UPDATE ledger_batches SET changes = changes - 1 WHERE batch_id = 0")
    findings = failed(ledger_db)
    assert findings["batch hash chain"] == (
        "first broken link: batch 0: its fields do not hash to its recorded batch_hash",
    )
    [counted] = findings["batch counts equal the rows they describe"]
    assert counted.startswith("batch 0: changes recorded ")


def test_log_rows_of_a_batch_without_a_batch_row_are_named(ledger_db: Engine) -> None:
    tamper(
        ledger_db,
        "INSERT INTO ledger_results (batch_id, position, seq, stream, request_id, payload)"
        " VALUES (7, 0, 0, 'deposit_results', 'forged', '{}')",
    )
    assert failed(ledger_db) == {
        "batch counts equal the rows they describe": (
            "batch 7: ledger_results holds rows of a batch that has no batch row",
        )
    }


def test_swapped_batch_hashes_break_the_chain_at_the_first_batch(ledger_db: Engine) -> None:
    # Two steps: batch_hash is unique, so a direct swap would collide half-way.
    tamper(ledger_db, "UPDATE ledger_batches SET batch_hash = 'x' || batch_hash")
    tamper(
        ledger_db,
        "UPDATE ledger_batches SET batch_hash = CASE batch_id"
        " WHEN 0 THEN (SELECT substr(batch_hash, 2) FROM ledger_batches WHERE batch_id = 1)"
        " ELSE (SELECT substr(batch_hash, 2) FROM ledger_batches WHERE batch_id = 0) END",
    )
    findings = failed(ledger_db)["batch hash chain"]
    assert findings[0] == (
        "first broken link: batch 0: its fields do not hash to its recorded batch_hash"
    )
    assert "batch 1: prev_hash is not the batch_hash of the batch before" in findings


def test_a_deleted_batch_row_is_named(ledger_db: Engine) -> None:
    tamper(ledger_db, "DELETE FROM ledger_batches WHERE batch_id = 0")
    assert failed(ledger_db)["batch hash chain"][:2] == (
        "first broken link: batch 1: expected batch 0 (ids must be contiguous)",
        "batch 1: prev_hash is not the batch_hash of the batch before",
    )


def test_ledger_verify_exits_non_zero_on_a_finding(
    ledger_db: Engine, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LEDGER_DATABASE_URL", ledger_db.url.render_as_string(hide_password=False))
    assert main(["verify"]) == 0
    assert "every check passed" in capsys.readouterr().out
    tamper(ledger_db, "UPDATE accounts SET value = 0 WHERE key = 'acct-000011'")
    assert main(["verify"]) == 1
    out = capsys.readouterr().out
    assert 'key "acct-000011"' in out and "merkle root of accounts" in out


def test_ledger_verify_replay_reexecutes_the_event_log_too(
    ledger_db: Engine, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LEDGER_DATABASE_URL", ledger_db.url.render_as_string(hide_password=False))
    assert main(["verify", "--replay"]) == 0
    out = capsys.readouterr().out
    assert "replay: table accounts" in out and "every check passed" in out
    # A forged change-log value that leaves every count, the tables and their digests alone:
    # of `ledger verify`'s checks, only the bank's declared rule that a transfer moves nothing
    # sees it (the transfer no longer nets to zero); the re-derivation sees it too.
    tamper(
        ledger_db,
        "UPDATE ledger_change_log SET before = to_jsonb(12345) WHERE (batch_id, position, seq)"
        " = (SELECT batch_id, position, seq FROM ledger_change_log"
        " WHERE before IS NOT NULL ORDER BY batch_id, position, seq LIMIT 1)",
    )
    assert main(["verify"]) == 1
    out = capsys.readouterr().out
    assert "FAILED  invariants: applied transfers move nothing in accounts" in out
    assert "1 of 10 checks failed" in out
    assert main(["verify", "--replay"]) == 1
    assert "FAILED  replay: change log" in capsys.readouterr().out
