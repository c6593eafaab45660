"""`ledger` as logs and scripts read it: run as `.venv/bin/ledger` with its output captured (not
a terminal), a line arrives whole however long it is, and the commands people script
(`balance`, `request`, `breaks`, `statements`, `audit`, `verify`) answer `--json` with exact
amounts: a decimal string and its unit, never raw minor units alone."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.config import Settings
from ledger_engine.reconcile.job import declared_sources, run_reconciliation
from ledger_engine.reconcile.statement_inbox import land_statement
from ledger_engine.store.database import connect
from tests.support.bank import deposit, lookup
from tests.support.events import event_file
from tests.support.ledger_command import ledger_env, libpq_form, run_ledger
from tests.support.reconcile import MAIN_BANK_DECLARATION

# A reason longer than any terminal is wide, as people write them.
LONG_NOTE = "the bank booked a fee [ref 7] we had not expected; " * 4


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
    (data / "reconciliation.toml").write_text(MAIN_BANK_DECLARATION, encoding="utf-8")
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


# --- point 12: whole lines and JSON for logs and scripts ---------------------------------------


def test_open_breaks_answer_json_with_amounts_in_the_sources_unit(env):
    found = answer(env, "breaks", status=1)  # open breaks: exit 1, as the table does
    by_reason = {b["reason"]: b for b in found["open_breaks"]}
    assert set(by_reason) == {"missing_in_ledger", "missing_in_statement"}
    unknown = by_reason["missing_in_ledger"]
    assert (unknown["source"], unknown["account"], unknown["reference"]) == (
        "Main bank",
        "alice",
        "R9",
    )
    assert unknown["statement_amount"] == {"amount": "3.00", "unit": "EUR"}
    assert unknown["ledger_amount"] is None
    assert by_reason["missing_in_statement"]["ledger_amount"] == {"amount": "7.00", "unit": "EUR"}


def test_a_long_line_arrives_whole_when_output_is_not_a_terminal(env):
    [unknown] = [
        b["break_id"]
        for b in answer(env, "breaks", status=1)["open_breaks"]
        if b["reason"] == "missing_in_ledger"
    ]
    note = LONG_NOTE.strip()
    posted = run_ledger(env, "breaks", "write-off", str(unknown), "--note", note, "--who", "ana")
    assert posted.returncode == 0, posted.stdout + posted.stderr

    history = run_ledger(env, "breaks", "history", str(unknown))
    assert history.returncode == 0, history.stderr
    assert any(note in line for line in history.stdout.splitlines()), history.stdout
    steps = answer(env, "breaks", "history", str(unknown))["steps"]
    assert [s["action"] for s in steps][-1] == "write_off_posted"
    assert (steps[-1]["who"], steps[-1]["note"]) == ("ana", note)


def test_statements_answer_json_with_each_sources_files(env):
    [source] = answer(env, "statements")["sources"]
    assert (source["name"], source["format"], source["table"]) == ("Main bank", "csv", "accounts")
    assert source["inbox"].endswith("/")
    assert source["counts"]["loaded"] == 1 and source["waiting"] == []
    [landed] = source["files"]
    assert (landed["file_name"], landed["outcome"], landed["entries"]) == ("nov.csv", "loaded", 2)


def test_verify_answers_json_and_every_check_passes(env):
    verdict = answer(env, "verify")
    assert verdict["passed"] is True and verdict["checks"]
    assert all(c["passed"] and c["findings"] == [] for c in verdict["checks"])
    names = {c["name"] for c in verdict["checks"]}
    assert any("hash chain" in name for name in names), names


def test_audit_ends_with_a_one_line_verdict_and_answers_json(env):
    done = run_ledger(env, "audit")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    # The Data Docs' address is one line, whole, however long.
    docs = [line for line in lines if line.startswith("Great Expectations Data Docs: ")]
    assert docs and all(line.endswith(".html") for line in docs), docs
    assert lines[-1].startswith("audit passed: every check of ") and "report: " in lines[-1]

    pages = sorted((Path(env["LEDGER_DATA_DIR"]) / "reports").glob("audit-*.html"))
    again = answer(env, "audit")  # nothing committed since: nothing new to audit
    assert again["passed"] is True and again["nothing_new"] is True
    assert again["report"] == str(pages[-1]) and again["checks"] == []
    said = run_ledger(env, "audit")
    assert said.returncode == 0, said.stdout + said.stderr
    assert said.stdout == f"audit: nothing new since batch 0; report: {pages[-1]}\n"
    assert sorted((Path(env["LEDGER_DATA_DIR"]) / "reports").glob("audit-*.html")) == pages
