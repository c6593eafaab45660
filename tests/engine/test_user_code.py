"""An application in the user's own module or package, not installed anywhere, runs on Spark:
the platform sends its code to the executors (no `--py-files`), and the result equals
`run_serial`'s."""

from __future__ import annotations

import textwrap
import uuid
from pathlib import Path

from ledger_engine import run_serial, run_spark
from ledger_engine.apps import load_ledger
from ledger_engine.runtime.spark.batch import ExecutionOptions
from ledger_engine.runtime.spark.shipping import application_modules

SIMPLE_TRADE = Path(__file__).parents[1] / "support" / "apps" / "simple_trade.py"
ON_SPARK = ExecutionOptions(bins=2, serial_fallback=False)


def test_a_ledger_in_the_users_own_file_runs_on_spark_as_serially(spark):
    ledger = load_ledger(f"{SIMPLE_TRADE}:build_ledger")
    from simple_trade import sample_events  # loaded from its file by load_ledger

    assert application_modules(ledger) == {"simple_trade"}
    events = sample_events(600, accounts=30, seed=5)
    result = run_spark(spark, ledger, events, options=ON_SPARK)
    assert result == run_serial(ledger, events)
    assert {r.payload["success"] for r in result.results} == {True, False}


def test_a_ledger_in_the_users_own_package_runs_on_spark_as_serially(spark, tmp_path, monkeypatch):
    # A fresh package name: Spark's Python workers outlive a test and keep what they imported.
    package = f"user_ledger_{uuid.uuid4().hex[:8]}"
    write_package(tmp_path / package)
    monkeypatch.syspath_prepend(str(tmp_path))  # the driver's path only, as a user's would be
    ledger = load_ledger(f"{package}.app:build_ledger")
    assert application_modules(ledger) == {package}
    events = [
        *(deposit(n, 100 + n) for n in range(10)),
        *(move(n, n % 10, (n * 3) % 10, 30 + n) for n in range(200)),
    ]
    result = run_spark(spark, ledger, events, options=ON_SPARK)
    assert result == run_serial(ledger, events)
    refused = {r.detail for r in result.rejections}
    assert refused == {"insufficient funds"}
    assert 10 < result.applied_count < 210  # some moves ran, some were refused


def deposit(n: int, amount: int):
    from ledger_engine import Event

    return Event("Deposits", f"d{n}", {"to": f"acct {n}", "amount": amount})


def move(n: int, source: int, target: int, amount: int):
    from ledger_engine import Event

    payload = {"from": f"acct {source}", "to": f"acct {target}", "amount": amount}
    return Event("Moves", f"m{n}", payload)


def write_package(folder: Path) -> None:
    """A two-module package: its rules in one module, its declarations in another."""
    folder.mkdir()
    (folder / "__init__.py").write_text('"""A user\'s ledger."""\n')
    (folder / "rules.py").write_text(
        textwrap.dedent(
            """
            def credit(event, ctx, account):
                account.add(event["amount"])

            def move(event, ctx, source, target):
                if source.read_or(0) >= event["amount"]:
                    source.write(source.read_or(0) - event["amount"])
                    target.write(target.read_or(0) + event["amount"])
                else:
                    ctx.abort("insufficient funds")
            """
        )
    )
    (folder / "app.py").write_text(
        textwrap.dedent(
            """
            from ledger_engine import AccessType, StreamingLedger

            from .rules import credit, move


            def source(event):
                return event["from"]


            def target(event):
                return event["to"]


            def build_ledger():
                ledger = StreamingLedger.create("Users' own ledger")
                accounts = ledger.declare_state("Cash Accounts")
                ledger.using_stream("Deposits").apply(credit).on(
                    accounts, target, "account", AccessType.ADD
                )
                ledger.using_stream("Moves").apply(move).on(
                    accounts, source, "source", AccessType.READ_WRITE
                ).on(accounts, target, "target", AccessType.READ_WRITE)
                return ledger
            """
        )
    )
