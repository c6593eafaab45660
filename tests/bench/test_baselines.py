"""The benchmark's baselines are honest: on the same transfers, the plain loop (`bench/plain.py`)
and the PL/pgSQL procedure (`bench/procedure.py`) end where the serial runner ends.

The workloads are the benchmark's own generators over 50 accounts that start with small
balances (some with no row at all), so that many transfers bounce, plus a handful of edge
cases: self-transfers (with and without a fee), credits into rows that do not exist, and a
source without a row. The procedure runs in a fresh migrated database of its own (`database_url`,
tests/conftest.py) seeded with the same opening rows.
"""

from __future__ import annotations

from typing import Any

import psycopg2
import pytest

from bench.plain import run_plain
from bench.procedure import run_procedure
from bench.workloads import Transfer, transfers
from ledger_engine import run_serial
from ledger_engine.apps.bank.generator import account_id, asset_id
from ledger_engine.apps.bank.ledger import REJECT, SUCCESS, build_ledger
from ledger_engine.core.records import RunResult
from ledger_engine.store.database import libpq_url

ACCOUNTS = 50
SIZE = 400
GENERATED = ("uniform", "zipf", "fee", "zipf_add")
WORKLOADS = (*GENERATED, "edge_cases")


def opening_state() -> dict[str, dict[str, int]]:
    """Balances of at most 30,000 (amounts go up to 10,000) and asset entries of at most 39
    (asset amounts up to 9); every tenth account and a different tenth of the asset entries
    have no row, so that reads of missing rows and credits that create rows both happen."""
    return {
        "accounts": {account_id(i): (i * 7919) % 30_000 for i in range(ACCOUNTS) if i % 10 != 9},
        "asset_ledger": {asset_id(i): (i * 31) % 40 for i in range(ACCOUNTS) if i % 10 != 8},
    }


def edge_cases() -> list[Transfer]:
    """Transfers the generated workloads may or may not contain, all in one place."""
    return [
        Transfer("self", 1, 1, 100, 1, None),  # one account row and one asset row, netting to 0
        Transfer("self-fee", 2, 2, 100, 1, 7),  # nets to -7, and the fee account's row is made
        Transfer("into-missing-account", 3, 9, 100, 1, None),  # creates acct-000009
        Transfer("into-missing-asset", 4, 18, 100, 1, 3),  # creates asset-000018
        Transfer("from-missing-account", 19, 5, 1, 1, None),  # reads 0: rejected
        Transfer("too-much", 6, 7, 1_000_000, 1, None),  # rejected
        Transfer("deposit-missing-account", None, 39, 500, 2, None),  # creates acct-000039
        Transfer("deposit-missing-asset", None, 38, 500, 2, None),  # creates asset-000038
        Transfer("deposit", None, 1, 500, 2, None),
        Transfer("self-again", 9, 9, 50, 1, 1),  # the row made above, spent by a self-transfer
    ]


def workload(name: str) -> list[Transfer]:
    return edge_cases() if name == "edge_cases" else transfers(name, SIZE, ACCOUNTS)


def oracle(work: list[Transfer]) -> RunResult:
    """The serial runner with the bank app over `work`, from `opening_state()`."""
    return run_serial(build_ledger(), [t.event() for t in work], opening_state())


def change_log(result: RunResult) -> list[tuple[Any, ...]]:
    """The run's changes as change-log rows (position, seq, table, key, before, after):
    `position` is the index of the event in the input, `seq` the index of the change among
    that transaction's changes (in the engine's order)."""
    position_of = {o.request_id: o.position for o in result.outcomes}
    rows: list[tuple[Any, ...]] = []
    for change in result.changes:
        position = position_of[change.request_id]
        seq = rows[-1][1] + 1 if rows and rows[-1][0] == position else 0
        rows.append((position, seq, change.table, change.key, change.before, change.after))
    return rows


def test_workloads_exercise_both_outcomes_and_self_transfers() -> None:
    """Guards the tests below: the transfer workloads bounce some transfers and apply some, and
    some applied transfer is a self-transfer."""
    for name in ("uniform", "zipf", "fee", "edge_cases"):
        statuses = {r.payload["status"] for r in oracle(workload(name)).results}
        assert statuses == {SUCCESS, REJECT}, name
    self_applied = [
        t
        for t, r in zip(edge_cases(), oracle(edge_cases()).outcomes, strict=True)
        if t.source == t.target and r.status == "applied"
    ]
    assert len(self_applied) == 3
    deposits = workload("zipf_add")
    assert all(t.is_deposit for t in deposits)
    assert {t.event().stream for t in deposits} == {"deposits"}


@pytest.mark.parametrize("name", WORKLOADS)
def test_plain_loop_ends_where_the_serial_runner_ends(name: str) -> None:
    work = workload(name)
    expected = oracle(work)
    run = run_plain([t.event() for t in work], opening_state())
    assert run.accounts == expected.state["accounts"]
    assert run.asset_ledger == expected.state["asset_ledger"]
    assert run.results == [r.payload for r in expected.results]


@pytest.mark.parametrize("name", WORKLOADS)
def test_procedure_ends_where_the_serial_runner_ends(name: str, database_url: str) -> None:
    work = workload(name)
    expected = oracle(work)
    dsn = libpq_url(database_url)
    seed(dsn, opening_state())
    outcome = run_procedure(dsn, work)
    # The procedure's `rejected` are the app's REJECTs (which the engine counts as applied:
    # the transaction commits, emitting REJECT); a deposit emits no result.
    statuses = [r.payload["status"] for r in expected.results]
    assert outcome["rejected"] == statuses.count(REJECT)
    assert outcome["applied"] == len(work) - statuses.count(REJECT)
    found = read_back(dsn)
    assert found["accounts"] == expected.state["accounts"]
    assert found["asset_ledger"] == expected.state["asset_ledger"]
    assert found["change_log"] == change_log(expected)


def seed(dsn: str, state: dict[str, dict[str, int]]) -> None:
    """Insert the opening rows into the state tables."""
    with psycopg2.connect(dsn) as conn, conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO accounts (key, value) VALUES (%s, %s)", state["accounts"].items()
        )
        cursor.executemany(
            "INSERT INTO asset_ledger (key, value) VALUES (%s, %s)", state["asset_ledger"].items()
        )
    conn.close()


def read_back(dsn: str) -> dict[str, Any]:
    """The state tables as dicts and `bench_change_log` as rows, in (position, seq) order."""
    with psycopg2.connect(dsn) as conn, conn.cursor() as cursor:
        cursor.execute("SELECT key, value FROM accounts")
        accounts = dict(cursor.fetchall())
        cursor.execute("SELECT key, value FROM asset_ledger")
        assets = dict(cursor.fetchall())
        cursor.execute(
            "SELECT position, seq, table_name, key, before, after FROM bench_change_log"
            " ORDER BY position, seq"
        )
        log = [tuple(row) for row in cursor.fetchall()]
    conn.close()
    return {"accounts": accounts, "asset_ledger": assets, "change_log": log}
