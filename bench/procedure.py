"""PostgreSQL alone, in one procedure: the transfers COPYed in, one PL/pgSQL loop applies them.

The benchmark's `procedure` variant: over one connection, in one transaction, the transfers
are COPYed into a temporary staging table and one `CALL` of `bench_apply_transfers`
(`bench/procedure.sql`) applies them in order with the bank app's rule, writing the real
`accounts` and `asset_ledger` and a change log (`bench_change_log`, the columns and indexes of
`ledger_change_log`) row for row as the engine writes it. The measured time is COPY, CALL and
COMMIT: what PostgreSQL needs to apply and log the batch with no client round trip per
transfer, the other end from `postgres_alone`'s one transaction per transfer.

One transaction has a price on hot rows: every update of a row leaves its old version in
place until the transaction ends (no pruning can remove a version that an open transaction
deleted), so each further read or update of that row walks all its versions so far. A row
written k times costs O(k^2), which `fee` (one fee account written by every transfer) and the
Zipf workloads' hottest rows pay: their throughput falls as the size grows, while `uniform`'s
holds.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import psycopg2
from psycopg2.extensions import connection

from bench.workloads import FEE_ACCOUNT, Transfer
from ledger_engine.apps.bank.generator import account_id, asset_id
from ledger_engine.core.stopwatch import Stopwatch

SQL_FILE = Path(__file__).with_name("procedure.sql")
SECTION = "-- name: "


@cache
def statements() -> dict[str, str]:
    """The named sections of `procedure.sql` (`schema`, `staging`, `copy`, `call`)."""
    sections: dict[str, list[str]] = {}
    lines: list[str] = []
    for line in SQL_FILE.read_text(encoding="utf-8").splitlines():
        if line.startswith(SECTION):
            lines = sections.setdefault(line.removeprefix(SECTION).strip(), [])
        else:
            lines.append(line)
    return {name: "\n".join(body).strip() for name, body in sections.items()}


def copy_rows(transfers: Sequence[Transfer]) -> io.StringIO:
    """The transfers as the CSV that the `copy` section reads, positions from 0."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for position, t in enumerate(transfers):
        # An empty unquoted CSV field is NULL: a deposit's source and any transfer's fee.
        source = "" if t.source is None else account_id(t.source)
        source_asset = "" if t.source is None else asset_id(t.source)
        fee, fee_account = ("", "") if t.fee is None else (t.fee, FEE_ACCOUNT)
        writer.writerow(
            (
                position,
                t.request_id,
                source,
                account_id(t.target),
                source_asset,
                asset_id(t.target),
                t.amount,
                t.asset_amount,
                fee,
                fee_account,
            )
        )
    out.seek(0)
    return out


def install(conn: connection) -> None:
    """Create `bench_change_log` (empty) and the procedure, and commit them."""
    with conn.cursor() as cursor:
        cursor.execute(statements()["schema"])
    conn.commit()


def run_procedure(dsn: str, transfers: Sequence[Transfer], batch_id: int = 0) -> dict[str, float]:
    """Apply `transfers` in one transaction of one connection; returns seconds (COPY, CALL and
    COMMIT), applied (moved money: a deposit or a transfer the source could afford) and
    rejected (the app's REJECT), as `postgres_alone` counts them. The change log's rows carry
    `batch_id`."""
    # Built before the clock starts, as the other approaches build their input beforehand.
    rows = copy_rows(transfers)
    sections = statements()
    conn = psycopg2.connect(dsn)
    try:
        install(conn)
        with conn.cursor() as cursor:
            cursor.execute(sections["staging"])
            watch = Stopwatch()
            cursor.copy_expert(sections["copy"], rows)
            cursor.execute(sections["call"], {"batch": batch_id})
            applied, rejected = cursor.fetchone()
        conn.commit()
        seconds = watch.elapsed()
    finally:
        conn.close()
    return {"seconds": seconds, "applied": applied, "rejected": rejected}
