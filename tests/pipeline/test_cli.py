"""The `ledger` command, run as a user runs it, on the embedded defaults."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.html_page import read_page

LEDGER = [sys.executable, "-m", "ledger_engine.cli"]


@pytest.fixture
def env(tmp_path: Path):
    environment = {
        **os.environ,
        "LEDGER_DATA_DIR": str(tmp_path),
        "LEDGER_SPARK_MASTER": "local[2]",
        "COLUMNS": "200",
    }
    environment.pop("LEDGER_DATABASE_URL", None)  # the embedded defaults, as on a fresh machine
    yield environment
    subprocess.run([*LEDGER, "db", "stop"], env=environment, check=True, capture_output=True)


def ledger(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LEDGER, *args], env=env, capture_output=True, text=True, timeout=600)


def test_demo_runs_the_pipeline_and_every_audit_passes(env, tmp_path: Path) -> None:
    demo = ledger(env, "demo", "--events", "3000", "--accounts", "100")
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "3000" in demo.stdout and "FAILED" not in demo.stdout
    # Its two pages say the demo wrote them, and its reconciliation links to its audit: the
    # batches the run added are the ones both are about.
    [audit_page] = (tmp_path / "reports").glob("audit-*.html")
    [reconciliation_page] = (tmp_path / "reports").glob("reconciliation-*.html")
    for page in (audit_page, reconciliation_page):
        said = read_page(page).text_in("written-by")
        assert said.startswith("Written by command ledger demo, host "), said
    linked = read_page(reconciliation_page).find("a", inside="linked-pages")
    own_row = f"index.html#{reconciliation_page.stem}"
    assert [a.attrs["href"] for a in linked] == [audit_page.name, own_row]
    # The bank declares a statement source: the demo lands a day's statement with one
    # difference of each kind and reconciles it, leaving breaks to work.
    assert "landed a statement of" in demo.stdout
    assert "Main bank: breaks: amount_mismatch 1, duplicate 1" in demo.stdout
    breaks = ledger(env, "breaks")
    assert breaks.returncode == 1, breaks.stdout + breaks.stderr
    assert "Open breaks: 6" in breaks.stdout
    # Its dates are the movements' (dated by their batches' commit): it states its closing
    # balances as of the end of their last day, never a day after.
    late = ledger(
        env,
        "psql",
        "-tAc",
        "SELECT count(*) FROM ledger_statement_balances WHERE as_of >"
        " (SELECT date_trunc('day', max(committed_at), 'UTC') + interval '1 day'"
        " FROM ledger_batches)",
    )
    assert (late.returncode, late.stdout.strip()) == (0, "0"), late.stderr

    balance = ledger(env, "balance", "acct-000001")
    assert balance.returncode == 0, balance.stderr
    assert balance.stdout.startswith("acct-000001: ")

    psql = ledger(env, "psql", "-tAc", "SELECT count(*) FROM reconciled_balances")
    assert psql.returncode == 0, psql.stderr
    assert int(psql.stdout.strip()) == 100
    assert psql.stderr == "", "no warning of the embedded server's package"

    audit = ledger(env, "audit")
    assert audit.returncode == 0, audit.stdout

    tamper = ledger(
        env, "psql", "-c", "UPDATE accounts SET value = value + 1 WHERE key = 'acct-000002'"
    )
    assert tamper.returncode == 0, tamper.stderr
    # The batch audit covers batches since the last passing audit: none here. A row changed
    # behind the engine's back in an audited batch is the full audit's to find.
    assert ledger(env, "audit").returncode == 0
    audit = ledger(env, "audit", "--full")
    assert audit.returncode == 1
    assert "FAILED" in audit.stdout


def test_demo_runs_any_ledger_that_declares_sample_events(env, tmp_path: Path) -> None:
    simple_trade = Path(__file__).parents[1] / "support" / "apps" / "simple_trade.py"
    # A user's ledger keeps its Great Expectations project in a folder of theirs, not ours.
    expectations = tmp_path / "expectations"
    env = {
        **env,
        "LEDGER_APP": f"{simple_trade}:build_ledger",
        "LEDGER_EXPECTATIONS": str(expectations),
    }
    demo = ledger(env, "demo", "--events", "400", "--rows", "10")
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "generated 400 events of ledger 'simple trade example'" in demo.stdout
    assert "FAILED" not in demo.stdout
    assert "ledger balance KEY --table bookEntries" not in demo.stdout
    assert "ledger balance KEY --table accounts" in demo.stdout

    assert list(expectations.glob("simple_trade_example_*/gx/expectations/*.json"))

    balance = ledger(env, "balance", "BOOK-3", "--table", "bookEntries")
    assert balance.returncode == 0, balance.stderr
    assert balance.stdout.startswith("BOOK-3: ")
