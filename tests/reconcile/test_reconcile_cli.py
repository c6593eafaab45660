"""`ledger reconcile [--dry-run]` and `ledger breaks [match | write-off | history]`, as a user
runs them: the sources and
rules read from the ledger's reconciliation file, statements from their inbox folder."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import Engine

from ledger_engine import cli
from ledger_engine.cli import main
from ledger_engine.config import Settings
from ledger_engine.reconcile.sources import Source
from ledger_engine.reconcile.statement_inbox import land_statement
from tests.support.bank import deposit
from tests.support.database import rows
from tests.support.events import event_file
from tests.support.html_page import read_page
from tests.support.reconcile import MAIN_BANK_DECLARATION


@pytest.fixture
def user(engine: Engine, database_url: str, commit_files, monkeypatch, tmp_path: Path) -> Path:
    """A bank ledger with two movements of alice's, a declaration and a landed statement."""
    events = [
        deposit("d1", "alice", 10_000, reference="R1", value_date="2026-11-02"),
        deposit("d2", "alice", 700, reference="R2", value_date="2026-11-03"),
    ]
    commit_files(engine, 0, [("b0.jsonl", event_file(events))])
    (tmp_path / "reconciliation.toml").write_text(MAIN_BANK_DECLARATION, encoding="utf-8")
    inbox = tmp_path / "statements"
    monkeypatch.setattr(cli.console, "width", 200)  # a wide terminal: rows on one line each
    monkeypatch.setenv("LEDGER_DATABASE_URL", database_url)
    monkeypatch.setenv("LEDGER_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("LEDGER_STATEMENTS", str(inbox))
    monkeypatch.setenv("LEDGER_RECONCILIATION", str(tmp_path / "reconciliation.toml"))
    return inbox


def land(inbox: Path, raw: bytes) -> None:
    """Land `raw` in the folder the platform derives from the source's label."""
    land_statement(inbox, Source("Main bank", "csv", "accounts", "EUR", 2), "2026-11-03.csv", raw)


def test_reconcile_records_matches_and_breaks_and_breaks_lists_them(
    user: Path, engine: Engine, capsys, monkeypatch
):
    land(user, b"Date,Amount,Ref\n2026-11-02,100.00,R1\n2026-11-03,3.00,R9\n")

    reports = Settings.from_env().reports

    assert main(["reconcile", "--dry-run"]) == 0
    dry = capsys.readouterr().out
    assert "dry run: nothing recorded" in dry and "reconciliation page" not in dry
    assert rows(engine, "SELECT count(*) FROM ledger_recon_runs") == [(0,)]
    assert not reports.exists() or list(reports.glob("reconciliation-*")) == []

    assert main(["reconcile"]) == 0
    out = capsys.readouterr().out
    assert "Main bank / 2026-11-03.csv: loaded (2 entries, 0 rejected)" in out
    assert "missing_in_ledger 1, missing_in_statement 1" in out
    (page,) = reports.glob("reconciliation-*.html")  # the run's page, listed in the index
    assert f"reconciliation page: {page}" in out
    oldest = read_page(page).body_rows("oldest-breaks")
    assert [row[1:4] for row in oldest] == [
        ["Main bank", "missing in the ledger", "alice"],
        ["Main bank", "missing in the statement", "alice"],
    ]
    index = read_page(reports / "index.html")
    assert [a.attrs["href"] for a in index.find("a", inside="reconciliations")] == [page.name]

    monkeypatch.setattr(cli.console, "width", 80)  # a terminal of 80 columns
    assert main(["breaks"]) == 1
    listed = capsys.readouterr().out
    assert "missing in the ledger" in listed and "R9" in listed
    assert "missing in the statement" in listed and "d2" in listed
    # Amounts as money in the source's unit (named once, in its table's title).
    assert "Main bank (EUR)" in listed
    assert re.search(r"missing in the ledger +alice +3\.00 +R9 +0 days", listed)
    assert re.search(r"missing in the statement +alice +7\.00 +d2 +0 days", listed)
    assert max(len(line) for line in listed.splitlines()) <= 80


def test_reconcile_names_a_mistake_in_the_declaration(user: Path, tmp_path: Path, capsys):
    (tmp_path / "reconciliation.toml").write_text(
        MAIN_BANK_DECLARATION.replace('table = "accounts"', 'table = "acounts"'), encoding="utf-8"
    )
    assert main(["reconcile"]) == 2
    assert "source 'Main bank': the ledger declares no table 'acounts'" in capsys.readouterr().out


def test_breaks_are_written_off_and_matched_by_hand_with_a_note(
    user: Path, engine: Engine, tmp_path: Path, capsys
):
    land(user, b"Date,Amount,Ref\n2026-11-02,100.00,R1\n2026-11-03,3.00,R9\n")
    assert main(["reconcile"]) == 0
    breaks = dict(rows(engine, "SELECT reason, break_id FROM ledger_recon_breaks"))
    unknown, unbooked = breaks["missing_in_ledger"], breaks["missing_in_statement"]
    capsys.readouterr()

    assert main(["breaks", "match", str(unbooked), "--note", "one side only"]) == 2
    assert "refused: a match needs at least one statement entry" in capsys.readouterr().out
    assert main(["breaks", "write-off", str(unknown), "--note", "fee", "--who", "ana"]) == 0
    posted = capsys.readouterr().out
    assert f"adjusting event recon-write-off-{unknown}-1 (+300 to alice) landed in" in posted
    [landed] = (tmp_path / "inbox").glob("*.jsonl")
    assert '"stream":"adjustments"' in landed.read_text().replace(" ", "")

    assert main(["breaks"]) == 1
    assert f"recon-write-off-{unknown}-1" in capsys.readouterr().out
    assert main(["breaks", "history", str(unknown)]) == 0
    history = capsys.readouterr().out
    assert "write_off_posted" in history and "ana" in history and "fee" in history
