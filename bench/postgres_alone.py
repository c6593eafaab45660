"""What a user would pick instead: PostgreSQL alone executing the transfers.

Each transfer is one `SERIALIZABLE` transaction of the seed's SQL, the bank app's rule
included: debit the source only if its balance exceeds the amount (and the fee), debit its
asset entry only if it exceeds the asset amount, then credit target, target asset and fee
account; a transfer that cannot be afforded is rolled back (the engine's REJECT). A deposit
(`zipf_add`) is its two credits: account and asset entry. Clients retry serialization failures
and deadlocks until the transaction commits.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import psycopg2
from psycopg2 import errors

from bench.workloads import FEE_ACCOUNT, Transfer
from ledger_engine.apps.bank.generator import account_id, asset_id
from ledger_engine.core.stopwatch import Stopwatch

DEBIT = "UPDATE accounts SET value = value - %s WHERE key = %s AND value > %s AND value > 0"
DEBIT_ASSET = "UPDATE asset_ledger SET value = value - %s WHERE key = %s AND value > %s"
CREDIT = (
    "INSERT INTO accounts (key, value) VALUES (%s, %s)"
    " ON CONFLICT (key) DO UPDATE SET value = accounts.value + EXCLUDED.value"
)
CREDIT_ASSET = (
    "INSERT INTO asset_ledger (key, value) VALUES (%s, %s)"
    " ON CONFLICT (key) DO UPDATE SET value = asset_ledger.value + EXCLUDED.value"
)
RETRIED = (errors.SerializationFailure, errors.DeadlockDetected)


@dataclass
class ClientReport:
    committed: int = 0
    rejected: int = 0
    retries: int = 0


def _apply(cursor, transfer: Transfer) -> bool:
    """One transfer's statements; False when the source cannot afford it."""
    if transfer.source is None:  # a deposit: only ever credits, never rejected
        cursor.execute(CREDIT, (account_id(transfer.target), transfer.amount))
        cursor.execute(CREDIT_ASSET, (asset_id(transfer.target), transfer.asset_amount))
        return True
    debit = transfer.amount + (transfer.fee or 0)
    cursor.execute(DEBIT, (debit, account_id(transfer.source), debit))
    if cursor.rowcount != 1:
        return False
    cursor.execute(
        DEBIT_ASSET, (transfer.asset_amount, asset_id(transfer.source), transfer.asset_amount)
    )
    if cursor.rowcount != 1:
        return False
    cursor.execute(CREDIT, (account_id(transfer.target), transfer.amount))
    cursor.execute(CREDIT_ASSET, (asset_id(transfer.target), transfer.asset_amount))
    if transfer.fee is not None:
        cursor.execute(CREDIT, (FEE_ACCOUNT, transfer.fee))
    return True


def _client(dsn: str, transfers: list[Transfer], report: ClientReport) -> None:
    conn = psycopg2.connect(dsn)
    conn.set_session(isolation_level="SERIALIZABLE")
    try:
        with conn.cursor() as cursor:
            for transfer in transfers:
                while True:
                    try:
                        applied = _apply(cursor, transfer)
                        if applied:
                            conn.commit()
                            report.committed += 1
                        else:
                            conn.rollback()
                            report.rejected += 1
                        break
                    except RETRIED:
                        conn.rollback()
                        report.retries += 1
    finally:
        conn.close()


def run_postgres(dsn: str, transfers: list[Transfer], clients: int) -> dict[str, float]:
    """Execute `transfers` from `clients` threads (each its own connection, transfers dealt
    round robin); returns seconds, committed, rejected and retries."""
    reports = [ClientReport() for _ in range(clients)]
    threads = [
        threading.Thread(target=_client, args=(dsn, transfers[i::clients], reports[i]))
        for i in range(clients)
    ]
    watch = Stopwatch()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = watch.elapsed()
    return {
        "seconds": seconds,
        "committed": sum(r.committed for r in reports),
        "rejected": sum(r.rejected for r in reports),
        "retries": sum(r.retries for r in reports),
    }
