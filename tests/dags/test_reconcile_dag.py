"""The `ledger_reconcile` DAG: it parses without importing the platform, runs when a statement
lands (the statement asset's watcher), daily unless told otherwise, and by hand; a whole run
with `dag.test()` over a committed bank ledger loads the landed statement, records a run with
its breaks (a green run: breaks are the business state, not a failure) and writes its page; a
second run with nothing new records a run that opens and closes nothing; a run fails only when
reconciliation itself fails. The watcher's trigger, run as the triggerer runs it against a
statement inbox, fires once when a file lands whole, not before, and never for one a run has
loaded.

Each Airflow call runs in a subprocess with an isolated AIRFLOW_HOME and the `LEDGER_*`
settings of the test: see conftest.py.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from ledger_engine.reconcile.matching import (
    AMOUNT_MISMATCH,
    MISSING_IN_LEDGER,
    MISSING_IN_STATEMENT,
)
from ledger_engine.reconcile.sources import Sources, load_sources
from ledger_engine.reconcile.statement_inbox import land_statement, load_statements
from ledger_engine.store.database import connect
from tests.support.airflow_dags import (
    REPO_ROOT,
    TRIGGER_WATCH,
    Sequence,
    log_tail,
    python_json,
    schedule_of,
)
from tests.support.bank import deposit
from tests.support.database import rows
from tests.support.events import event_file
from tests.support.html_page import read_page
from tests.support.statements import Entry, Statement, camt053_document

DAG_ID = "ledger_reconcile"
TASKS = ["reconcile_statements", "write_reconciliation_page"]
# The bank's own declaration (expectations/bank/reconciliation.toml), which the watcher's
# test leaves the trigger to find in its default place: one camt.053 source, "Main bank",
# naming accounts by their keys.
DECLARATION = REPO_ROOT / "expectations" / "bank" / "reconciliation.toml"
SOURCE = "Main bank"

MOVEMENTS = [
    deposit("d1", "alice", 10_000, reference="R1", value_date="2026-11-02"),
    deposit("d2", "alice", 5_000, reference="R2", value_date="2026-11-03"),
    deposit("d3", "alice", 700, reference="R3", value_date="2026-11-03"),
]
# What the bank says of alice: R1 as booked, R2 for 55.00 instead of 50.00, an R9 the ledger
# never saw; it says nothing of R3.
STATEMENT = camt053_document(
    [
        Statement(
            "alice",
            iban=False,
            entries=[
                Entry(10_000, booking_date=date(2026, 11, 2), reference="R1"),
                Entry(5_500, booking_date=date(2026, 11, 3), reference="R2"),
                Entry(1_200, booking_date=date(2026, 11, 4), reference="R9"),
            ],
        )
    ]
)
BREAKS = {AMOUNT_MISMATCH: 1, MISSING_IN_LEDGER: 1, MISSING_IN_STATEMENT: 1}


def bank_sources() -> Sources:
    return load_sources(DECLARATION)


# --- Parsing ------------------------------------------------------------------------------


def test_the_reconcile_dag_parses_reading_only_the_settings(parsed: dict) -> None:
    assert parsed["import_errors"] == {}
    assert Path(parsed["dags"][DAG_ID]["fileloc"]).name == "ledger_reconcile.py"
    assert parsed["modules_loaded_by_parsing"] == []


def test_it_reconciles_then_writes_the_page_one_run_at_a_time(parsed: dict) -> None:
    dag = parsed["dags"][DAG_ID]
    assert dag["task_ids"] == TASKS, "topological order"
    assert dag["tasks"]["write_reconciliation_page"]["upstream"] == ["reconcile_statements"]
    assert all(dag["tasks"][t]["retries"] == 0 for t in TASKS)
    assert dag["max_active_runs"] == 1
    assert dag["catchup"] is False
    assert dag["params"] == ["source"], "one param: the source a run may be narrowed to"
    assert {"ledger", "reconciliation"} <= set(dag["tags"])
    # Airflow's DAG list shows only the asset in its Schedule column: the clock is a tag.
    assert "clock: @daily (UTC)" in dag["tags"]


def test_it_runs_when_a_statement_lands_and_daily(airflow_base_env: dict[str, str]) -> None:
    statements = Path("/srv/ledger/statements")
    schedule = schedule_of(DAG_ID, airflow_base_env | {"LEDGER_STATEMENTS": str(statements)})

    assert schedule["timetable"] == "AssetOrTimeSchedule"
    assert schedule["cron"] == "0 0 * * *", "@daily"
    assert schedule["asset"] == {"name": "ledger_statements", "uri": statements.as_uri()}
    assert schedule["watchers"] == [
        {
            "name": "statement_landed",
            "classpath": "ledger_engine.reconcile.trigger.StatementLanded",
            "kwargs": {"poll_seconds": 30.0},
            "rebuilt": True,
        }
    ]


def test_the_daily_run_can_be_turned_off_and_the_watcher_slowed(
    airflow_base_env: dict[str, str],
) -> None:
    schedule = schedule_of(
        DAG_ID,
        airflow_base_env
        | {"LEDGER_RECONCILE_SCHEDULE": "none", "LEDGER_STATEMENT_POLL_SECONDS": "300"},
    )

    assert schedule["timetable"] == "AssetTriggeredTimetable", "statements and by hand only"
    assert [w["kwargs"] for w in schedule["watchers"]] == [{"poll_seconds": 300.0}]


# --- The watcher's trigger, as the triggerer runs it ----------------------------------------


def test_the_watcher_fires_once_for_a_statement_landed_whole_and_none_loaded(
    airflow_base_env: dict[str, str], database_url: str, engine: Engine, tmp_path: Path
) -> None:
    sources = bank_sources()
    inbox = tmp_path / "statements"
    folder = inbox / sources.sources[SOURCE].folder
    land_statement(inbox, sources.sources[SOURCE], "loaded.xml", STATEMENT)
    assert [o.outcome for o in load_statements(engine, sources, inbox)] == ["loaded"]
    later = tmp_path / "later.xml"
    later.write_bytes(STATEMENT.replace(b"R9", b"R8"))
    env = airflow_base_env | {
        "LEDGER_DATABASE_URL": database_url,
        "LEDGER_DATA_DIR": str(tmp_path),
        "LEDGER_STATEMENTS": str(inbox),
    }

    seen = python_json(
        "-m",
        TRIGGER_WATCH,
        "ledger_engine.reconcile.trigger.StatementLanded",
        str(folder),
        "later.xml",
        str(later),
        env=env,
    )

    assert seen == {
        "before": None,  # the file a run loaded is not news
        "while_landing": False,
        "fired": {"statements": [f"{folder.name}/later.xml"]},
        "fired_again": False,
    }


# --- Whole runs against PostgreSQL --------------------------------------------------------

# The DAG's runs over the deployment read their sources from this declaration: one rule, so
# that Spark matches in few jobs (the watcher's test reads the bank's own declaration, from
# its default place).
ONE_RULE = """
version = 1

[sources."Main bank"]
format = "camt053"
table = "accounts"
currency = "EUR"
precision = 2

[[sources."Main bank".rules]]
name = "same reference and amount"
reference = { similarity = 1.0 }
date = { window_days = 1 }
"""


@dataclass
class Deployment:
    """A committed bank ledger whose statement inbox the DAG reconciles."""

    env: dict[str, str]
    workdir: Path
    data_dir: Path
    engine: Engine

    def log_tail(self, name: str, lines: int = 80) -> str:
        return log_tail(self.workdir, name, lines)

    def open_breaks(self) -> list[tuple]:
        return rows(
            self.engine,
            "SELECT b.opened_run_id, o.reason, o.statement_reference, o.request_id"
            " FROM open_breaks AS o JOIN ledger_recon_breaks AS b USING (break_id)"
            " ORDER BY break_id",
        )


@pytest.fixture(scope="module")
def deployment(
    airflow_env: dict[str, str],
    module_database_url: str,
    commit_files,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Deployment]:
    """alice's three movements committed, and the bank's statement of them landed."""
    workdir = tmp_path_factory.mktemp("reconcile_dag")
    data_dir = workdir / "ledger"
    declaration = workdir / "reconciliation.toml"
    declaration.write_text(ONE_RULE, encoding="utf-8")
    engine = connect(module_database_url)
    try:
        commit_files(engine, 0, [("b0.jsonl", event_file(MOVEMENTS))])
        source = load_sources(declaration).sources[SOURCE]
        land_statement(data_dir / "statements", source, "2026-11-04.xml", STATEMENT)
        env = airflow_env | {
            "LEDGER_DATABASE_URL": module_database_url,
            "LEDGER_DATA_DIR": str(data_dir),
            "LEDGER_RECONCILIATION": str(declaration),
            "LEDGER_SPARK_MASTER": "local[2]",
        }
        yield Deployment(env, workdir, data_dir, engine)
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def runs(deployment: Deployment, dag_sequence: Sequence) -> list[dict[str, Any]]:
    """Four whole runs of the DAG with `dag.test()`, nothing landing between them: two with
    the declaration, the third with a mistake in it, the fourth for a ledger declaring no
    sources (none named, none beside its expectations). They go one after the other in the
    session's one DAG-running process (`dag_sequence`), each with the settings changed for
    it; the log of all four is `runs.log`."""
    wrong = deployment.workdir / "wrong.toml"
    wrong.write_text(ONE_RULE.replace('table = "accounts"', 'table = "acounts"'), encoding="utf-8")
    no_sources = deployment.workdir / "expectations"
    no_sources.mkdir()
    changed = [
        {},
        {},
        {"LEDGER_RECONCILIATION": str(wrong)},
        {"LEDGER_RECONCILIATION": "", "LEDGER_EXPECTATIONS": str(no_sources)},
    ]
    return dag_sequence(
        [
            {"name": f"run-{n}", "dag_id": "ledger_reconcile", "env": settings}
            for n, settings in enumerate(changed)
        ],
        deployment.env,
        deployment.workdir,
        "runs",
    )


def test_a_run_records_the_statements_breaks_and_writes_its_page_green(
    deployment: Deployment, runs: list[dict[str, Any]]
) -> None:
    first = runs[0]
    assert first["task_states"] == dict.fromkeys(TASKS, "success"), deployment.log_tail("runs")
    assert first["state"] == "success", "open breaks are no failure"

    summary = first["xcom"]["reconcile_statements"]
    assert summary["files"] == [
        {
            "source": SOURCE,
            "file": "2026-11-04.xml",
            "outcome": "loaded",
            "entries": 3,
            "rejected": 0,
        }
    ]
    part = summary["sources"][SOURCE]
    assert (part["statement_items"], part["ledger_items"], part["matches"]) == (3, 3, 1)
    assert part["breaks"] == BREAKS
    assert (part["breaks_opened"], part["breaks_closed"], part["written_off"]) == (3, 0, 0)
    assert summary["run_ids"] == [part["run_id"]]
    recorded = rows(
        deployment.engine, "SELECT who FROM ledger_recon_runs WHERE run_id = :id", id=part["run_id"]
    )
    assert recorded == [(f"airflow {DAG_ID} {first['run_id']}",)]
    assert deployment.open_breaks() == [
        (part["run_id"], AMOUNT_MISMATCH, "R2", "d2"),
        (part["run_id"], MISSING_IN_LEDGER, "R9", None),
        (part["run_id"], MISSING_IN_STATEMENT, None, "d3"),
    ]

    page = Path(first["xcom"]["write_reconciliation_page"]["page"])
    assert page.parent == deployment.data_dir / "reports"
    assert first["xcom"]["write_reconciliation_page"]["run_ids"] == [part["run_id"]]
    assert f"airflow {DAG_ID} {first['run_id']}" in html.unescape(page.read_text(encoding="utf-8"))
    # The page names this DAG run and its task, and the batches its run read; the index too.
    shown = read_page(page)
    assert shown.text_in("written-by") == (
        f"Written by DAG {DAG_ID}, DAG run {first['run_id']}, task write_reconciliation_page."
    )
    assert shown.text_in("batches-read") == "Its runs read batch 0 of the ledger anew."
    index = read_page(page.parent / "index.html")
    who = f"airflow {DAG_ID} {first['run_id']} (task write_reconciliation_page)"
    assert who in index.text_in(page.stem)


def test_the_reconcile_task_logs_each_break_it_opened_as_money(
    deployment: Deployment, runs: list[dict[str, Any]]
) -> None:
    log = (deployment.workdir / "runs.log").read_text(encoding="utf-8", errors="replace")
    opened = re.findall(
        rf"source {SOURCE}: opened break (\d+): ([a-z ]+), account alice, (-?[\d,]+\.\d\d) EUR",
        log,
    )
    ids = {int(i) for i, *_ in opened}
    recorded = rows(deployment.engine, "SELECT break_id FROM ledger_recon_breaks")
    assert ids == {break_id for (break_id,) in recorded}
    assert sorted(reason for _, reason, _ in opened) == [
        "amount mismatch",
        "missing in the ledger",
        "missing in the statement",
    ]
    assert " closed break " not in log, "the runs closed none"


def test_a_second_run_with_nothing_new_records_a_run_that_changes_nothing(
    deployment: Deployment, runs: list[dict[str, Any]]
) -> None:
    first, second = runs[:2]
    assert second["task_states"] == dict.fromkeys(TASKS, "success"), deployment.log_tail("runs")
    summary = second["xcom"]["reconcile_statements"]
    assert summary["files"] == [], "the statement was loaded once"
    part = summary["sources"][SOURCE]
    # It looks again at the items of the open breaks, and decides the same.
    assert (part["statement_items"], part["ledger_items"], part["matches"]) == (2, 2, 0)
    assert part["breaks"] == BREAKS
    assert (part["breaks_opened"], part["breaks_closed"]) == (0, 0)
    [first_id] = first["xcom"]["reconcile_statements"]["run_ids"]
    assert summary["run_ids"] == [part["run_id"]] != [first_id]
    assert [opened for opened, *_ in deployment.open_breaks()] == [first_id] * 3, (
        "the first run's breaks, kept open"
    )
    pages = [run["xcom"]["write_reconciliation_page"]["page"] for run in (first, second)]
    assert pages[0] != pages[1], "a page per run"


def test_a_run_fails_when_reconciliation_itself_fails(
    deployment: Deployment, runs: list[dict[str, Any]]
) -> None:
    failed = runs[2]

    assert failed["state"] == "failed"
    assert failed["task_states"] == {
        "reconcile_statements": "failed",
        "write_reconciliation_page": "upstream_failed",
    }
    log = (deployment.workdir / "runs.log").read_text(encoding="utf-8", errors="replace")
    assert "the ledger declares no table 'acounts'" in log
    assert rows(deployment.engine, "SELECT count(*) FROM ledger_recon_runs") == [(2,)]


def test_a_ledger_declaring_no_sources_has_nothing_to_reconcile(
    deployment: Deployment, runs: list[dict[str, Any]]
) -> None:
    nothing = runs[3]

    assert nothing["state"] == "success"
    assert nothing["task_states"] == dict.fromkeys(TASKS, "skipped")
    assert rows(deployment.engine, "SELECT count(*) FROM ledger_recon_runs") == [(2,)]
