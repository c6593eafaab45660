"""Where a source's statements go, and landing one safely, as a person does it: `ledger
reconcile` and its `--help` name each source's inbox folder, `ledger statements land` lands a
file whole and never over another, `ledger statements` says what became of every file, and
`ledger statements sample` writes a statement from the committed movements with differences
injected, dated as they are, which reconciles on Spark to exactly the truth it was written
with."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine

from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.cli import main
from ledger_engine.config import Settings
from ledger_engine.reconcile.formats.camt053 import parse_camt053
from ledger_engine.reconcile.generated_statement import KINDS, DifferencePlan
from ledger_engine.reconcile.job import declared_sources
from ledger_engine.reconcile.matching.spark import spark_matcher
from ledger_engine.reconcile.run import reconcile
from ledger_engine.reconcile.sample import sample_statement
from ledger_engine.reconcile.statement_inbox import land_statement
from ledger_engine.store.database import connect
from tests.support.bank import deposit, transfer
from tests.support.database import rows
from tests.support.events import event_file
from tests.support.statements import Entry, Statement, camt053_document

# Two sources: the bank's statements (camt.053, rows named by the ledger's keys) and a card
# provider's CSV files about alice alone.
DECLARATION = """
version = 1

[sources."Main bank"]
format = "camt053"
table = "accounts"
currency = "EUR"
precision = 2

[[sources."Main bank".rules]]
name = "same reference, amount and day"
reference = { similarity = 1.0 }
date = { window_days = 0 }

[[sources."Main bank".rules]]
name = "same reference, near amount and date"
reference = { similarity = 1.0 }
amount = { tolerance = 50 }
date = { window_days = 3 }

[[sources."Main bank".rules]]
name = "split payment"
strategy = "many_to_one"
group_by = "reference"
reference = { similarity = 1.0 }
date = { window_days = 3 }

[[sources."Main bank".rules]]
name = "merged payment"
strategy = "one_to_many"
group_by = "reference"
reference = { similarity = 1.0 }
date = { window_days = 3 }

[[sources."Main bank".rules]]
name = "same amount and day, no reference"
date = { window_days = 0 }

[sources."Card provider"]
format = "csv"
table = "accounts"
currency = "EUR"
precision = 2
account = "alice"
[sources."Card provider".csv.columns]
booking_date = "Date"
amount = "Amount"
reference = "Ref"
"""

DAYS = ("2026-11-02", "2026-11-03", "2026-11-04", "2026-11-05")
ACCOUNTS = ("alice", "bob", "carol", "dave")


def movements() -> list:
    """Deposits of four accounts over four days, each with a reference of its own, a payout
    batch of three deposits under one reference, and transfers between them."""
    events = [
        deposit(
            f"d{n}",
            ACCOUNTS[n % 4],
            10_000 + 137 * n,
            reference=f"INV-{n}",
            value_date=DAYS[n % 4],
            description=f"invoice {n}",
        )
        for n in range(16)
    ]
    events += [
        deposit(f"p{n}", "bob", 2_000 + n, reference="PAYOUT-7", value_date=DAYS[1])
        for n in range(3)
    ]
    events += [
        transfer(
            f"t{n}", ACCOUNTS[n], ACCOUNTS[n + 1], 500 + n, reference=f"TR-{n}", value_date=DAYS[2]
        )
        for n in range(3)
    ]
    return events


@pytest.fixture(scope="module")
def committed(module_database_url: str, commit_files) -> str:
    """A bank ledger with the movements committed, once for the module."""
    engine = connect(module_database_url)
    try:
        commit_files(engine, 0, [("b0.jsonl", event_file(movements()))])
    finally:
        engine.dispose()  # a template: no connection may stay open
    return module_database_url


@pytest.fixture
def database_url(make_database_url: Callable[..., str], committed: str) -> str:
    """A copy of `committed` for one test (the `engine` fixture's database too): as if the
    movements were committed to it, without a Spark batch per test."""
    return make_database_url(template=committed)


@pytest.fixture
def person(database_url: str, monkeypatch, tmp_path: Path) -> Settings:
    """A bank ledger with the movements committed, the declaration above, and a data folder."""
    (tmp_path / "reconciliation.toml").write_text(DECLARATION, encoding="utf-8")
    monkeypatch.setenv("LEDGER_DATABASE_URL", database_url)
    monkeypatch.setenv("LEDGER_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("LEDGER_RECONCILIATION", str(tmp_path / "reconciliation.toml"))
    return Settings.from_env()


def folder_of(settings: Settings, name: str) -> Path:
    sources = declared_sources(settings, build_ledger())
    return settings.statements / sources.sources[name].folder


def said(capsys) -> str:
    return capsys.readouterr().out


def test_reconcile_and_its_help_name_each_sources_inbox_folder(person: Settings, capsys):
    with pytest.raises(SystemExit) as shown:
        main(["reconcile", "--help"])
    assert shown.value.code == 0
    helped = said(capsys)
    bank, cards = folder_of(person, "Main bank"), folder_of(person, "Card provider")
    assert f"'Main bank' (camt053): {bank}/" in helped
    assert f"'Card provider' (csv): {cards}/" in helped
    assert bank.is_dir() and cards.is_dir()  # there to put files in, before any landed

    assert main(["reconcile"]) == 0  # nothing landed: it says where files go
    out = said(capsys)
    assert f"Main bank: inbox {bank}/ (nothing new landed)" in out
    assert f"Card provider: inbox {cards}/ (nothing new landed)" in out


def test_a_landed_file_is_whole_never_replaces_another_and_its_fate_is_listed(
    person: Settings, tmp_path: Path, capsys
):
    bank = folder_of(person, "Main bank")
    good = tmp_path / "nov.xml"
    good.write_bytes(
        camt053_document(
            [
                Statement(
                    "alice",
                    iban=False,
                    entries=[Entry(10_000, DAYS[0], reference="INV-0")],
                    opening=0,
                    closing=10_000,
                )
            ]
        )
    )
    bad = tmp_path / "garbage.xml"
    bad.write_bytes(b"<not a statement")

    assert main(["statements", "land", str(good), "--source", "Main bank"]) == 0
    out = said(capsys)
    assert f"landed {good} for source 'Main bank' as {bank / 'nov.xml'}" in out
    assert "the next `ledger reconcile` loads it" in out
    assert [p.name for p in bank.iterdir()] == ["nov.xml"]  # no hidden leftover
    assert (bank / "nov.xml").read_bytes() == good.read_bytes()

    # The same name again is refused and the file lying there kept; `--as` lands it.
    bad_under_good_name = tmp_path / "other" / "nov.xml"
    bad_under_good_name.parent.mkdir()
    bad_under_good_name.write_bytes(b"something else")
    assert main(["statements", "land", str(bad_under_good_name), "--source", "Main bank"]) == 2
    assert "is never replaced" in said(capsys)
    assert (bank / "nov.xml").read_bytes() == good.read_bytes()
    assert main(["statements", "land", str(good), "--source", "Nope"]) == 2
    assert "no source 'Nope' is declared; declared: 'Main bank', 'Card provider'" in said(capsys)
    assert main(["statements", "land", str(good), "--source", "Main bank", "--as", ".x"]) == 2
    assert "must be a plain file name" in said(capsys)

    assert main(["statements"]) == 0
    listed = said(capsys)
    assert f"inbox {bank}/" in listed
    assert "files: 0 loaded, 0 rejected, 0 duplicate, 1 waiting for the next run" in listed
    assert "nov.xml: waiting" in listed

    assert main(["reconcile"]) == 0
    out = said(capsys)
    assert "Main bank / nov.xml: loaded (1 entries, 0 rejected)" in out
    assert f"Main bank: inbox {bank}/ (1 file(s) taken)" in out

    assert (
        main(["statements", "land", str(good), "--source", "Main bank", "--as", "again.xml"]) == 0
    )
    assert "its content was loaded before, as nov.xml" in said(capsys)
    assert main(["statements", "land", str(bad), "--source", "Main bank"]) == 0
    said(capsys)
    assert main(["reconcile"]) == 0
    said(capsys)

    assert main(["statements"]) == 0
    listed = said(capsys)
    assert (
        "files: 1 loaded, 1 rejected, 1 duplicate, 0 waiting for the next run; "
        "entries: 1 loaded, 1 rejected"
    ) in listed
    assert "again.xml: duplicate of nov.xml (1 entries, 0 rejected there)" in listed
    assert "garbage.xml: rejected (0 entries, 1 rejected)" in listed
    assert "nov.xml: loaded (1 entries, 0 rejected)" in listed
    assert "files: 0 loaded, 0 rejected, 0 duplicate, 0 waiting" in listed  # the card provider


def test_a_sample_statement_is_dated_by_the_movements_and_lands_for_the_next_run(
    person: Settings, engine: Engine, tmp_path: Path, capsys
):
    bank = folder_of(person, "Main bank")
    assert main(["statements", "sample", "--source", "Card provider"]) == 2
    assert "reads csv files; sample statements are written in camt.053 only" in said(capsys)
    with pytest.raises(SystemExit) as refused:  # argparse's usage error
        main(["statements", "sample", "--source", "Main bank", "--differences", "oops=1"])
    assert refused.value.code == 2
    assert "'oops=1': give none, or KIND=N[,KIND=N...]" in capsys.readouterr().err

    # To a file of one's own: written whole, not landed.
    out_file = tmp_path / "mine.xml"
    args = ["statements", "sample", "--source", "Main bank", "--accounts", "2"]
    assert main([*args, "--differences", "none", "--output", str(out_file)]) == 0
    out = said(capsys)
    assert f"written to {out_file} (not landed" in out
    assert list(bank.iterdir()) == []
    parsed = parse_camt053(
        out_file.read_bytes(), declared_sources(person, build_ledger()).sources["Main bank"]
    )
    assert {e.account for e in parsed.entries} == {"alice", "bob"}
    # Its days are the movements': the last movement's is the closing balances' date.
    # alice's and bob's last movements are the transfers of DAYS[2]; the bare closing date
    # reads as the end of that day.
    last = DAYS[2]
    end_of_last_day = datetime.combine(date.fromisoformat(last), time(0), UTC) + timedelta(1)
    assert {b.as_of for b in parsed.balances} == {end_of_last_day}
    assert max(e.value_date or e.booking_date for e in parsed.entries).isoformat() == last
    assert f"{DAYS[0]} to {last} (closing balances as of {last})" in out
    assert "differences injected: none" in out

    # Landed, with no difference: the next run matches every movement of the two accounts.
    assert main([*args, "--differences", "none"]) == 0
    out = said(capsys)
    (landed,) = bank.iterdir()
    assert f"landed as {landed}" in out and landed.name.startswith("sample-")
    assert main(["reconcile"]) == 0
    assert "Main bank: breaks: none" in said(capsys)
    # (The card provider, with no statement yet, has alice's movements missing in its own.)
    breaks = "SELECT count(*) FROM ledger_recon_breaks WHERE source = 'Main bank'"
    assert rows(engine, breaks) == [(0,)]
    matched = rows(
        engine, "SELECT count(*) FROM ledger_recon_matched_changes WHERE source = 'Main bank'"
    )
    assert matched == [(len(parsed.entries),)]


@pytest.mark.parametrize("seed", [1, 2])
def test_a_sample_with_differences_reconciles_on_spark_to_its_truth(
    person: Settings, engine: Engine, spark, seed: int
):
    """The sample's own account of what a correct run concludes, every difference kind
    injected, is what reconciliation on Spark concludes over the committed movements."""
    sources = declared_sources(person, build_ledger())
    source = sources.sources["Main bank"]
    sample = sample_statement(
        engine, source, accounts=4, differences=DifferencePlan(), seed=seed, message_id="T-1"
    )
    assert sample.accounts == ACCOUNTS
    assert sample.injected == {kind: 1 for kind in KINDS}
    assert (sample.first_day.isoformat(), sample.last_day.isoformat()) <= (min(DAYS), max(DAYS))
    assert sample.last_day.isoformat() == max(DAYS)
    land_statement(person.statements, source, "sample.xml", sample.document)

    report = reconcile(engine, sources, person.statements, spark_matcher(spark), who="test")
    (loaded,) = report.files
    (run,) = [part for part in report.sources if part.source == "Main bank"]
    assert run.outcome == sample.generated.truth(loaded.file_id)

