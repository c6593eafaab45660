"""Any row's value as of a moment or a batch, from the change log: what the serial runner had
after that batch, for the writer and for a reader who may not read the change log itself."""

from __future__ import annotations

from sqlalchemy import Engine

from ledger_engine import run_serial
from ledger_engine.apps.bank.ledger import build_ledger
from tests.support.bank import deposit, transfer
from tests.support.database import rows
from tests.support.events import event_file
from tests.support.logins import Logins

BATCHES = [
    [deposit("d1", "alice", 100), deposit("d2", "bob", 50)],
    [transfer("t1", "alice", "bob", 30), deposit("d3", "carol", 7)],
    [transfer("t2", "bob", "alice", 80), transfer("t3", "carol", "alice", 7)],
]


def test_a_rows_value_as_of_each_batch_is_the_serial_runners_after_it(
    engine: Engine, commit_files, database_url: str
) -> None:
    for batch_id, events in enumerate(BATCHES):
        commit_files(engine, batch_id, [(f"b{batch_id}.jsonl", event_file(events))])
    committed = dict(rows(engine, "SELECT batch_id, committed_at FROM ledger_batches"))
    ledger = build_ledger()
    logins = Logins(database_url)
    try:
        reader = logins.create("reader").connect()
        with reader.cursor() as cursor:
            for batch_id in range(len(BATCHES)):
                expected = run_serial(ledger, [e for b in BATCHES[: batch_id + 1] for e in b])
                for key in ("alice", "bob", "carol", "nobody"):
                    balance = expected.state["accounts"].get(key, 0)
                    cursor.execute(
                        "SELECT ledger_balance_at_batch('accounts', %s, %s),"
                        " ledger_balance_at('accounts', %s, %s),"
                        " ledger_value_at('accounts', %s, %s) #>> '{}'",
                        (key, batch_id, key, committed[batch_id], key, committed[batch_id]),
                    )
                    found = cursor.fetchone()
                    assert found[:2] == (balance, balance), (batch_id, key)
                    assert found[2] == (
                        None if key not in expected.state["accounts"] else str(balance)
                    )
            cursor.execute(
                "SELECT ledger_balance_at('accounts', 'alice', %s)",
                (min(committed.values()).replace(year=2000),),
            )
            assert cursor.fetchone() == (0,)  # before the first batch: not yet written
        reader.close()
    finally:
        logins.drop_all()
