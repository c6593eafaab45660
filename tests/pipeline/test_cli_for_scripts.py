"""`ledger` as logs and scripts read it: run as `.venv/bin/ledger` with its output captured (not
a terminal), a line arrives whole however long it is, and the commands people script
(`balance`, `request`, `breaks`, `statements`, `audit`, `verify`) answer `--json` with exact
amounts: a decimal string and its unit, never raw minor units alone."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.config import Settings
from ledger_engine.reconcile.job import declared_sources, run_reconciliation
from ledger_engine.reconcile.statement_inbox import land_statement
from ledger_engine.store.database import connect
from tests.support.bank import deposit, lookup
from tests.support.events import event_file
from tests.support.ledger_command import ledger_env, libpq_form, run_ledger

DECLARATION = """
version = 1

[sources."Main bank"]
format = "csv"
table = "accounts"
currency = "EUR"
precision = 2
account = "alice"
[sources."Main bank".csv.columns]
booking_date = "Date"
amount = "Amount"
reference = "Ref"

[[sources."Main bank".rules]]
name = "same reference"
reference = { similarity = 1.0 }
date = { window_days = 1 }

[sources."Main bank".write_off]
stream = "adjustments"
"""
# A reason longer than any terminal is wide, as people write them.
LONG_NOTE = "the bank booked a fee we had not expected; " * 4


@pytest.fixture(scope="module")
def env(
    module_make_database_url: Callable[..., str],
    commit_files,
    spark,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, str]:
    """A bank ledger on the test server: alice's two deposits (28,099.32 EUR) and a balance
    lookup committed; a statement with one entry the ledger has and one it has not, reconciled
    (two open breaks); the environment `.venv/bin/ledger` runs on it with."""
    url = module_make_database_url()
    data = tmp_path_factory.mktemp("scripted")
    (data / "reconciliation.toml").write_text(DECLARATION, encoding="utf-8")
    environment = ledger_env(
        data, libpq_form(url), LEDGER_RECONCILIATION=str(data / "reconciliation.toml")
    )
    engine = connect(url)
    try:
        events = [
            deposit("d1", "alice", 2_809_232, reference="R1", value_date="2026-11-02"),
            deposit("d2", "alice", 700, reference="R2", value_date="2026-11-03"),
            lookup("q1", "alice"),
        ]
        commit_files(engine, 0, [("b0.jsonl", event_file(events))])
    finally:
        engine.dispose()
    settings, ledger = Settings.from_env(environment), build_ledger()
    sources = declared_sources(settings, ledger)
    statement = b"Date,Amount,Ref\n2026-11-02,28092.32,R1\n2026-11-03,3.00,R9\n"
    land_statement(settings.statements, sources.sources["Main bank"], "nov.csv", statement)
    run_reconciliation(settings, ledger, sources, who="a test", spark=spark)
    return environment


def answer(env: dict[str, str], *args: str, status: int = 0):
    """The JSON a command printed with --json, after it ended with `status`."""
    done = run_ledger(env, *args, "--json")
    assert done.returncode == status, done.stdout + done.stderr
    return json.loads(done.stdout)


# --- point 9: amounts in their unit -----------------------------------------------------------


def test_a_balance_lookups_result_reads_as_money_in_its_unit(env):
    done = run_ledger(env, "request", "q1")
    assert done.returncode == 0, done.stderr
    assert "balance 28,099.32 EUR" in done.stdout and "2809932" not in done.stdout

    found = answer(env, "request", "q1")
    assert found["outcome"] == "applied" and found["stream"] == "balance_lookups"
    [result] = found["results"]
    assert result["payload"] == {"account_id": "alice", "balance": 2809932}
    assert result["amounts"] == {"balance": {"amount": "28099.32", "unit": "EUR"}}


def test_a_balance_answers_json_with_an_exact_decimal_and_its_unit(env):
    row = answer(env, "balance", "alice")
    assert row == {
        "table": "accounts",
        "key": "alice",
        "amount": "28099.32",
        "unit": "EUR",
        "minor_units": 2809932,
        "last_batch_id": 0,
    }
    assert answer(env, "balance", "nobody", status=1) == {
        "table": "accounts",
        "key": "nobody",
        "found": False,
    }
