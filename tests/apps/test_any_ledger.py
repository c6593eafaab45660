"""Any ledger a user declares runs through the whole platform, as the bank does: the seed's
simple trade example (a module of the user's own, loaded from its file) and a ledger drawn by
the hypothesis app generator under hostile names, beside the bank. Each lands its events as
files, runs the pipeline on Spark (checked against `run_serial`), and passes `ledger verify`,
the replay, the batch audit and the full audit (its declared invariants among them), whose
report is written; all in one database, each ledger in its own schema."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg2
import pytest

from ledger_engine import Event, run_serial
from ledger_engine.apps import load_ledger
from ledger_engine.apps.bank.generator import generate_events
from ledger_engine.audit.proof.verify import verify_ledger
from ledger_engine.cli import main
from ledger_engine.config import Settings
from ledger_engine.core.ingest import parse_line
from ledger_engine.core.money import money_text
from ledger_engine.core.records import canonical_json
from ledger_engine.pipeline.event_inbox import write_event_files
from ledger_engine.pipeline.job import PipelineReport, run_pipeline
from ledger_engine.store.database import ledger_schema, open_store
from ledger_engine.tasks.audit_runs import run_audits
from tests.support.database import committed_state

TESTS = Path(__file__).parents[1]
SIMPLE_TRADE = TESTS / "support" / "apps" / "simple_trade.py"
GENERATED = TESTS / "support" / "generated_apps.py"


@dataclass(frozen=True)
class App:
    """An application as a user points the platform at it, and the events they land."""

    spec: str  # LEDGER_APP
    events: Callable[[], list[Event]]  # called once the app is loaded


def _module(name: str):
    return sys.modules[name]  # loaded from its file by load_ledger


APPS = {
    "bank": App(
        "ledger_engine.apps.bank.ledger:build_ledger",
        lambda: generate_events(400, accounts=25, seed=13, bad_fraction=0.05),
    ),
    "simple trade": App(
        f"{SIMPLE_TRADE}:build_ledger",
        lambda: _module("simple_trade").sample_events(400, accounts=20, seed=14),
    ),
    "generated": App(
        f"{GENERATED}:build_sample_ledger",
        lambda: _module("support.generated_apps").sample_events(),
    ),
}


@dataclass
class Committed:
    """One application's ledger after its pipeline run."""

    settings: Settings
    events: list[Event]
    report: PipelineReport


@pytest.fixture(scope="module", params=list(APPS))
def committed(request, module_empty_database_url, spark, tmp_path_factory) -> Committed:
    """The application's events landed in three files (in order: `write_event_files`) and
    run through the pipeline, into its own schema of the module's one database."""
    app = APPS[request.param]
    data_dir = tmp_path_factory.mktemp(request.param.replace(" ", "-"))
    settings = Settings.from_env(
        {
            "LEDGER_DATABASE_URL": module_empty_database_url,
            "LEDGER_DATA_DIR": str(data_dir),
            "LEDGER_APP": app.spec,
            "LEDGER_FILES_PER_BATCH": "1",
            "LEDGER_EXPECTATIONS": str(data_dir / "expectations"),
        }
    )
    load_ledger(app.spec)
    events = app.events()
    write_event_files(events, settings.inbox, events_per_file=len(events) // 3 + 1)
    report = run_pipeline(settings, spark=spark)
    return Committed(settings, events, report)


def test_the_pipeline_commits_what_the_serial_runner_computes(committed):
    ledger = load_ledger(committed.settings.app)
    expected = run_serial(ledger, committed.events)
    report = committed.report
    assert [b.batch_id for b in report.batches] == [0, 1, 2]
    assert report.total("ingested") == len(committed.events)
    assert report.total("applied") == expected.applied_count
    assert report.total("rejected") == len(expected.rejections)
    assert report.total("duplicates") == len(expected.duplicates)
    assert committed_state(committed.settings, ledger) == expected.state
    engine = open_store(committed.settings)
    try:
        with engine.connect() as conn:
            schema = conn.exec_driver_sql("SELECT current_schema()").scalar()
    finally:
        engine.dispose()
    assert schema == ledger_schema(ledger)


def test_ledger_verify_passes_with_the_declared_invariants(committed):
    ledger = load_ledger(committed.settings.app)
    engine = open_store(committed.settings)
    try:
        checks = verify_ledger(engine, ledger)
    finally:
        engine.dispose()
    assert [c.name for c in checks if not c.passed] == []
    names = {c.name for c in checks}
    assert {f"merkle root of {t}" for t in ledger.tables} <= names
    assert set(ledger.invariants) <= names


def test_ledger_verify_replay_re_derives_the_ledger_from_the_command_line(
    committed, monkeypatch, capsys
):
    use_settings(monkeypatch, committed.settings)
    assert main(["verify", "--replay"]) == 0
    out = capsys.readouterr().out
    assert "every check passed" in out
    ledger = load_ledger(committed.settings.app)
    assert all(f"replay: table {name}" in out for name in ledger.tables)


def test_the_batch_and_the_full_audit_pass_and_write_their_reports(committed):
    ledger = load_ledger(committed.settings.app)
    batch, batch_page = run_audits(committed.settings)
    assert batch.passed, batch.failures()
    full, full_page = run_audits(committed.settings, full=True)
    assert full.passed, full.failures()
    names = {c.name for c in full.checks}
    assert {f"{t} equals the fold of its change log" for t in ledger.tables} <= names
    assert set(ledger.invariants) <= names
    assert {f"{i}, in scope" for i in ledger.invariants} <= {c.name for c in batch.checks}
    assert batch_page.is_file() and full_page.is_file() and batch_page != full_page
    page = full_page.read_text(encoding="utf-8")
    assert "<script>alert" not in page
    project = committed.settings.expectations / ledger_schema(ledger) / "gx"
    assert (project / "expectations" / "ledger_integrity.json").is_file()


def test_ledger_balance_shows_a_row_of_any_declared_table(committed, monkeypatch, capsys):
    ledger = load_ledger(committed.settings.app)
    expected = run_serial(ledger, committed.events).state
    table = next(name for name in reversed(list(ledger.tables)) if expected[name])
    key, value = sorted(expected[table].items(), key=lambda item: str(item[0]))[0]
    use_settings(monkeypatch, committed.settings)

    assert main(["balance", str(key), "--table", table]) == 0
    # An amount reads in the table's unit where it declares one, with thousands separators
    # where it does not; any other value as its JSON.
    declared = ledger.tables[table]
    if declared.value_type is int:
        shown = money_text(value, declared.unit)
    else:
        shown = canonical_json(value)
    assert f"{key}: {shown} (last changed in batch" in capsys.readouterr().out
    assert main(["balance", "no such key", "--table", table]) == 1


def use_settings(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> None:
    """The environment a `ledger` command of these settings runs in."""
    monkeypatch.setenv("LEDGER_DATABASE_URL", settings.database_url or "")
    monkeypatch.setenv("LEDGER_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("LEDGER_APP", settings.app)
    monkeypatch.setenv("LEDGER_EXPECTATIONS", str(settings.expectations))


def test_ledger_db_url_connects_any_client_to_the_ledgers_schema(committed, monkeypatch, capsys):
    use_settings(monkeypatch, committed.settings)
    assert main(["db", "url"]) == 0
    url = capsys.readouterr().out.strip()
    connection = psycopg2.connect(url)  # libpq reads it as psql does
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_schema(), count(*) FROM ledger_rows")
            schema, rows = cursor.fetchone()
    finally:
        connection.close()
    ledger = load_ledger(committed.settings.app)
    assert schema == ledger_schema(ledger)
    assert rows > 0


def _landed(inbox: Path) -> list[Event]:
    events = []
    for path in sorted(inbox.glob("*.jsonl")):
        for raw in path.read_bytes().splitlines():
            parsed = parse_line(raw)
            assert isinstance(parsed, Event), parsed
            events.append(parsed)
    return events


@pytest.mark.parametrize("name", ["bank", "simple trade"])
def test_ledger_generate_lands_the_sample_events_the_application_declares(
    name, monkeypatch, capsys, tmp_path
):
    app = APPS[name]
    monkeypatch.setenv("LEDGER_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("LEDGER_APP", app.spec)
    command = ["generate", "--events", "120", "--rows", "12", "--seed", "5", "--tag", "t1"]

    assert main(command) == 0
    assert "wrote 120 events" in capsys.readouterr().out
    ledger = load_ledger(app.spec)
    declared = ledger.sample_events(120, rows=12, seed=5)
    landed = _landed(tmp_path / "inbox")
    assert [e.payload for e in landed] == [e.payload for e in declared]
    assert [e.request_id for e in landed] == [
        f"t1-{e.request_id}" if isinstance(e.request_id, str) else e.request_id for e in declared
    ]
    result = run_serial(ledger, landed)
    undeclared = {e.stream for e in landed} - set(ledger.streams)
    assert undeclared <= {r.stream for r in result.rejections}
    assert result.applied_count > 100  # the sample exercises the ledger, not its rejections
    first_table = next(iter(ledger.tables))
    assert len(result.state[first_table]) == 12


def test_ledger_generate_says_how_to_declare_a_sample_where_the_ledger_has_none(
    monkeypatch, capsys, tmp_path
):
    monkeypatch.setenv("LEDGER_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("LEDGER_APP", APPS["generated"].spec)

    assert main(["generate", "--events", "10"]) == 2
    assert "declares no sample events: declare them with ledger.declare_sample_events" in (
        capsys.readouterr().out.replace("\n", " ")
    )
    assert main(["demo", "--events", "10"]) == 2
    assert not (tmp_path / "inbox").exists() or not list((tmp_path / "inbox").iterdir())
