"""Client retries are never applied twice, and any request id's outcome can be looked up.

A retry reuses the request id of an event sent before it: in the same batch, in a later batch,
or in a later run of the pipeline. Wherever it lands it is a duplicate of the event that
executed the id (`exists` with the same payload, `exists_with_different_payload` otherwise),
money moves once, and `request_outcomes`, `request_outcome` and `ledger request` tell a client
what became of the id. Everything runs through the real pipeline: Spark, staging, the commit
into PostgreSQL.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg2 import sql
from sqlalchemy import Engine, create_engine, make_url, text

from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.cli import main
from ledger_engine.config import Settings
from ledger_engine.core.records import EXISTS, EXISTS_WITH_DIFFERENT_PAYLOAD, Event
from ledger_engine.pipeline.event_inbox import write_event_files
from ledger_engine.pipeline.job import run_pipeline
from ledger_engine.runtime.serial import run_serial
from ledger_engine.store.database import connect, ledger_url
from ledger_engine.store.requests import DuplicateEvent, request_outcome
from tests.support.bank import deposit, lookup, transfer
from tests.support.database import rows
from tests.support.events import event_file

LEDGER = build_ledger()
A, B = "acct-a", "acct-b"  # their asset entries: asset-acct-a and asset-acct-b


# Two events that apply and one that is rejected (a negative amount aborts a deposit) ...
# (a deposit brings 50 units of its account's asset entry, a transfer moves 5)
FIRST = [
    deposit("dep-1", A, 1_000, asset_amount=50),
    transfer("xfer-1", A, B, 300, asset_amount=5),
    deposit("bad-1", B, -5, asset_amount=50),
]
# ... then every one of them sent again: as it was, or changed.
RETRIES = [
    transfer("xfer-1", A, B, 300, asset_amount=5),
    transfer("xfer-1", A, B, 999, asset_amount=5),
    deposit("dep-1", A, 1_000, asset_amount=50),
    # The client "fixed" its rejected request: still a duplicate.
    deposit("bad-1", B, 5, asset_amount=50),
    deposit("bad-1", B, -5, asset_amount=50),
]
RETRY_KINDS = [EXISTS, EXISTS_WITH_DIFFERENT_PAYLOAD, EXISTS, EXISTS_WITH_DIFFERENT_PAYLOAD, EXISTS]
TRANSFER_RESULT = {
    "status": "SUCCESS",
    "source_account_id": A,
    "target_account_id": B,
    "source_balance": 700,
    "target_balance": 300,
}


# -- landing the retries: same batch, later batch, later run -----------------------------------


@dataclass(frozen=True)
class Landed:
    """A database holding FIRST and RETRIES; the retries' first one is at (batch, position)."""

    url: str
    engine: Engine
    retry_batch: int
    retry_offset: int

    def retry_at(self, index: int) -> tuple[int, int]:
        return self.retry_batch, self.retry_offset + index


@pytest.fixture(scope="module")
def scratch_database(pg_server_url: str) -> Iterator[Callable[[], str]]:
    """A factory of fresh empty databases shared by a module's tests, dropped at its end
    (conftest's databases live for one test; these scenarios are too costly to run per test)."""
    admin = create_engine(pg_server_url, isolation_level="AUTOCOMMIT")
    created: list[str] = []

    def execute(statement: sql.Composable) -> None:
        with admin.connect() as conn:
            conn.connection.cursor().execute(statement)

    def make() -> str:
        name = f"ledger_retries_{uuid.uuid4().hex[:12]}"
        execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        created.append(name)
        url = make_url(pg_server_url).set(database=name).render_as_string(hide_password=False)
        return ledger_url(url, build_ledger())  # the bank's schema, which its pipeline creates

    yield make
    for name in created:
        execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    admin.dispose()


@pytest.fixture(scope="module", params=["same batch", "later batch", "later run"])
def landed(
    request: pytest.FixtureRequest,
    scratch_database: Callable[[], str],
    spark: Any,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Landed]:
    """FIRST then RETRIES, committed through the pipeline with the retries in the same batch,
    in the next batch, or in the batch of a second pipeline run on the same inbox."""
    url = scratch_database()
    data_dir = tmp_path_factory.mktemp("retries")
    settings = Settings.from_env({"LEDGER_DATA_DIR": str(data_dir), "LEDGER_DATABASE_URL": url})
    if request.param == "same batch":
        write_event_files(FIRST + RETRIES, settings.inbox, prefix="events")
        run_pipeline(settings, spark=spark)
        where = (0, len(FIRST))
    elif request.param == "later batch":
        # One file per batch: a run takes at most LEDGER_FILES_PER_BATCH files per batch.
        settings = settings.with_overrides(files_per_batch=1)
        write_event_files(FIRST, settings.inbox, prefix="a-first")
        write_event_files(RETRIES, settings.inbox, prefix="b-retries")
        run_pipeline(settings, spark=spark)
        where = (1, 0)
    else:
        write_event_files(FIRST, settings.inbox, prefix="a-first")
        first_run = run_pipeline(settings, spark=spark)
        write_event_files(RETRIES, settings.inbox, prefix="b-retries")
        second_run = run_pipeline(settings, spark=spark)
        assert [b.batch_id for b in first_run.batches + second_run.batches] == [0, 1]
        where = (1, 0)
    engine = connect(url)
    try:
        yield Landed(url, engine, *where)
    finally:
        engine.dispose()


# -- a retry is a duplicate, and money moves once ----------------------------------------------

EXECUTED_AT = {"dep-1": (0, 0), "xfer-1": (0, 1), "bad-1": (0, 2)}  # FIRST is batch 0


def test_every_retry_is_a_duplicate_of_the_event_that_executed_its_id(landed: Landed) -> None:
    found = rows(
        landed.engine,
        "SELECT batch_id, position, request_id, outcome, duplicate_kind,"
        " duplicate_of_batch_id, duplicate_of_position"
        " FROM request_outcomes ORDER BY batch_id, position",
    )

    first = [
        (0, 0, "dep-1", "applied", None, None, None),
        (0, 1, "xfer-1", "applied", None, None, None),
        (0, 2, "bad-1", "rejected", None, None, None),
    ]
    retries = [
        (*landed.retry_at(i), e.request_id, "duplicate", kind, *EXECUTED_AT[e.request_id])
        for i, (e, kind) in enumerate(zip(RETRIES, RETRY_KINDS, strict=True))
    ]
    assert found == first + retries


def test_a_retried_request_moves_money_once(landed: Landed) -> None:
    engine = landed.engine
    assert dict(rows(engine, "SELECT key, value FROM accounts")) == {A: 700, B: 300}
    assert dict(rows(engine, "SELECT key, value FROM asset_ledger")) == {
        f"asset-{A}": 45,
        f"asset-{B}": 5,
    }
    assert rows(
        engine,
        "SELECT request_id, count(*) FROM ledger_change_log GROUP BY request_id ORDER BY 1",
    ) == [("dep-1", 2), ("xfer-1", 4)]
    assert rows(engine, "SELECT request_id, payload FROM ledger_results") == [
        ("xfer-1", TRANSFER_RESULT)
    ]
    assert rows(
        engine, "SELECT request_id, outcome, batch_id, position FROM ledger_requests ORDER BY 1"
    ) == [("bad-1", "rejected", 0, 2), ("dep-1", "applied", 0, 0), ("xfer-1", "applied", 0, 1)]
    assert rows(
        engine,
        "SELECT sum(events_ingested), sum(applied), sum(rejected), sum(duplicates)"
        " FROM ledger_batches",
    ) == [(len(FIRST) + len(RETRIES), 2, 1, len(RETRIES))]


# -- looking up a request id ---------------------------------------------------------------------


def test_the_lookup_gives_an_applied_request_with_its_results_and_its_duplicates(
    landed: Landed,
) -> None:
    found = request_outcome(landed.engine, "xfer-1")

    assert found is not None
    assert (found.stream, found.outcome, found.batch_id, found.position) == (
        "transfers",
        "applied",
        0,
        1,
    )
    assert found.results == (TRANSFER_RESULT,)
    assert (found.rejection_reason, found.rejection_detail) == (None, None)
    assert found.duplicates == (
        DuplicateEvent(*landed.retry_at(0), "transfers", EXISTS, found.duplicates[0].committed_at),
        DuplicateEvent(
            *landed.retry_at(1),
            "transfers",
            EXISTS_WITH_DIFFERENT_PAYLOAD,
            found.duplicates[1].committed_at,
        ),
    )


def test_the_lookup_gives_a_rejected_request_with_its_reason_and_its_duplicates(
    landed: Landed,
) -> None:
    found = request_outcome(landed.engine, "bad-1")

    assert found is not None
    assert (found.outcome, found.batch_id, found.position, found.results) == (
        "rejected",
        0,
        2,
        (),
    )
    assert found.rejection_reason == "aborted"
    assert found.rejection_detail == "amount must be a positive integer, got -5"
    assert [(d.batch_id, d.position, d.kind) for d in found.duplicates] == [
        (*landed.retry_at(3), EXISTS_WITH_DIFFERENT_PAYLOAD),
        (*landed.retry_at(4), EXISTS),
    ]


def test_the_lookup_gives_an_applied_request_without_results_an_empty_tuple(
    landed: Landed,
) -> None:
    found = request_outcome(landed.engine, "dep-1")

    assert found is not None
    assert (found.outcome, found.results) == ("applied", ())
    assert [(d.batch_id, d.position, d.kind) for d in found.duplicates] == [
        (*landed.retry_at(2), EXISTS)
    ]


def test_the_lookup_knows_no_request_id_nobody_sent(landed: Landed) -> None:
    assert request_outcome(landed.engine, "never-sent") is None


@pytest.fixture
def ledger_env(landed: Landed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The `ledger` command's environment, pointing at the landed database."""
    monkeypatch.setenv("LEDGER_DATABASE_URL", landed.url)
    monkeypatch.setenv("LEDGER_DATA_DIR", str(tmp_path))


def test_the_request_command_prints_results_reasons_and_duplicates(
    landed: Landed, ledger_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["request", "xfer-1"]) == 0
    applied = capsys.readouterr().out
    assert "xfer-1 (transfers): applied in batch 0, position 1, committed " in applied
    assert f"result: {json.dumps(TRANSFER_RESULT, sort_keys=True, separators=(',', ':'))}" in (
        applied
    )
    assert "2 duplicate(s) of batch 0, position 1, not run" in applied
    table = [
        [cell.strip() for cell in line.split("│")[1:4]]
        for line in applied.splitlines()
        if line.startswith("│")
    ]
    assert table == [
        [*map(str, landed.retry_at(0)), EXISTS],
        [*map(str, landed.retry_at(1)), EXISTS_WITH_DIFFERENT_PAYLOAD],
    ]

    assert main(["request", "bad-1"]) == 0
    rejected = capsys.readouterr().out
    assert "bad-1 (deposits): rejected in batch 0, position 2" in rejected
    assert "reason: aborted: amount must be a positive integer, got -5" in rejected
    assert "result:" not in rejected


def test_the_request_command_exits_1_for_an_unknown_request_id(
    ledger_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["request", "never-sent"]) == 1
    assert "no request 'never-sent'" in capsys.readouterr().out


def test_a_lookup_by_request_id_reads_indexes_not_whole_tables(engine: Engine) -> None:
    """On a few thousand events, one id's outcome comes from index scans: a sequential scan
    of the event log or the results would grow with the ledger."""
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO ledger_events (batch_id, position, source_file, line_number,"
                " stream, request_id, payload, outcome)"
                " SELECT i / 1000, i % 1000, 'events.jsonl', i % 1000 + 1, 'balance_lookups',"
                " 'req-' || i, '{}', 'applied' FROM generate_series(0, 4999) AS i"
            )
        )
        conn.execute(
            text(
                "INSERT INTO ledger_results (batch_id, position, seq, stream, request_id, payload)"
                " SELECT batch_id, position, 0, stream, request_id, '{\"balance\": 0}'"
                " FROM ledger_events"
            )
        )
        conn.execute(
            text(
                "INSERT INTO ledger_requests (request_id, batch_id, position, fingerprint, outcome)"
                " SELECT request_id, batch_id, position, 'f', outcome FROM ledger_events"
            )
        )
    with engine.connect() as conn:
        conn.execute(text("ANALYZE"))
        (plan,) = conn.execute(
            text("EXPLAIN (FORMAT JSON) SELECT * FROM request_outcomes WHERE request_id = :id"),
            {"id": "req-1234"},
        ).scalar_one()

    scanned = {node["Relation Name"]: node["Node Type"] for node in plan_nodes(plan["Plan"])}
    assert scanned["ledger_events"] != "Seq Scan"
    assert scanned["ledger_results"] != "Seq Scan"


def plan_nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The nodes of an EXPLAIN (FORMAT JSON) plan that scan a relation."""
    if "Relation Name" in node:
        yield node
    for child in node.get("Plans", ()):
        yield from plan_nodes(child)


# -- property: batch by batch equals the serial runner over the concatenation ------------------

ACCOUNTS = [f"acct-{i}" for i in range(3)]
# Non-positive amounts are rejected (`aborted`): about one event in six.
AMOUNTS = st.integers(-100, 500)


def bank_event(request_id: str) -> st.SearchStrategy[Event]:
    account = st.sampled_from(ACCOUNTS)
    return st.one_of(
        st.builds(deposit, st.just(request_id), account, AMOUNTS, asset_amount=st.just(50)),
        st.builds(
            transfer, st.just(request_id), account, account, AMOUNTS, asset_amount=st.just(5)
        ),
        st.builds(lookup, st.just(request_id), account),
    )


@st.composite
def batches_with_retries(draw: st.DrawFn) -> list[list[Event]]:
    """Two batches of bank events (each Spark batch costs seconds); about one event in three
    retries the request id of any event sent before it, in its own batch or the one before,
    with the same payload or another one."""
    sent: list[Event] = []
    batches: list[list[Event]] = []
    for _ in range(2):
        batch: list[Event] = []
        for _ in range(draw(st.integers(1, 8))):
            if sent and draw(st.integers(0, 2)) == 0:
                earlier = draw(st.sampled_from(sent))
                same = draw(st.booleans())
                event = earlier if same else draw(bank_event(earlier.request_id))
            else:
                event = draw(bank_event(f"req-{len(sent)}"))
            batch.append(event)
            sent.append(event)
        batches.append(batch)
    return batches


def outcome_kinds(engine: Engine) -> list[tuple[str, str | None]]:
    return rows(
        engine,
        "SELECT e.outcome, d.kind FROM ledger_events AS e"
        " LEFT JOIN ledger_duplicates AS d USING (batch_id, position)"
        " ORDER BY e.batch_id, e.position",
    )


@settings(
    max_examples=6,
    deadline=None,
    # Every example commits into a fresh database of its own from the factory.
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(batches=batches_with_retries())
def test_batches_with_retries_across_their_boundaries_equal_the_serial_run(
    make_database_url: Callable[[], str], commit_files: Callable[..., Any], batches
) -> None:
    expected = run_serial(LEDGER, [e for batch in batches for e in batch])
    kinds = iter(d.kind for d in expected.duplicates)
    expected_kinds = [
        (o.status, next(kinds) if o.status == "duplicate" else None) for o in expected.outcomes
    ]

    engine = connect(make_database_url())
    try:
        for batch_id, batch in enumerate(batches):
            commit_files(
                engine, batch_id, [(f"events-{batch_id}.jsonl", event_file(batch))], LEDGER
            )

        assert outcome_kinds(engine) == expected_kinds
        assert dict(rows(engine, "SELECT key, value FROM accounts")) == expected.state["accounts"]
        assert (
            dict(rows(engine, "SELECT key, value FROM asset_ledger"))
            == expected.state["asset_ledger"]
        )
        assert rows(
            engine,
            "SELECT request_id, payload FROM ledger_results ORDER BY batch_id, position, seq",
        ) == [(r.request_id, r.payload) for r in expected.results]
    finally:
        engine.dispose()
