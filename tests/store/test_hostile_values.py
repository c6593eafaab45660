"""Hostile values in events are stored as data, never run as SQL or mangled on the way.

Account ids, asset ids, request ids and stream names that look like SQL, like COPY's or CSV's
special sequences, that are very long, or full of control characters go through the real
pipeline (Spark, staging by COPY, the commit) and come back byte for byte, in the tables and
in the reader's views, with the same outcome as the serial runner.
"""

from __future__ import annotations

import random
import string
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine

from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.core.ingest import ingest_files
from ledger_engine.core.money import money_text
from ledger_engine.core.records import Event, RunResult
from ledger_engine.runtime.serial import run_serial
from ledger_engine.store.batch_reads import array_value
from ledger_engine.store.database import libpq_url
from ledger_engine.store.staging import Stager, net_row
from tests.support.bank import deposit, lookup, transfer
from tests.support.database import rows
from tests.support.events import event_file
from tests.support.logins import Login, Logins

# Different texts, each a valid account id, asset id and request id (at most 1,024 bytes).
HOSTILE = [
    "'); DROP TABLE accounts; --",
    '"; DELETE FROM ledger_batches; --',
    "x' OR '1'='1",
    "$$; TRUNCATE ledger_events; $$",
    "%s %(key)s {0} {key}",  # placeholders of psycopg2 and str.format
    "\\.",  # COPY's end-of-data marker
    "\\N",  # COPY's text-format NULL
    "NULL",
    'a,b\n"c"\r\n\\.\nd',  # CSV's separator, quotes, line ends, and the marker on a line
    "".join(map(chr, range(1, 32))) + "\x7f",  # every control character but NUL
    "\u202egnp.exe",  # right-to-left override
    "\ufeff\u200b\u2028\u2029",  # byte order mark, zero width space, line/paragraph separators
    "ünïcødé 漢字 🙂",
    "A" * 1_000,
    "".join(random.Random(7).choices(string.ascii_letters + string.digits, k=1_000)),
]
# Ids far longer than any index entry may be: 10,000 characters, repetitive and random.
TOO_LONG = [
    "B" * 10_000,
    "".join(random.Random(8).choices(string.printable, k=10_000)),
]
LEDGER = build_ledger()


def hostile_events(ids: list[str]) -> list[Event]:
    """Per id: a deposit into the account and the asset entry of that id, with that request
    id; a transfer from it to the next one; a balance lookup; a retry of the deposit (a
    duplicate); and an event on a stream of that name (rejected)."""
    events = [deposit(h, h, 100 + i, asset=h, asset_amount=100 + i) for i, h in enumerate(ids)]
    for i, h in enumerate(ids):
        target = ids[(i + 1) % len(ids)]
        events.append(transfer(f"transfer {h}", h, target, 7 + i, assets=(h, target)))
        events.append(lookup(f"lookup {h}", h))
        events.append(deposit(h, h, 100 + i, asset=h, asset_amount=100 + i))
        events.append(Event(h, f"stream {h}", {"account_id": h}))
    return events


def hostile_file(events: list[Event]) -> list[tuple[str, bytes]]:
    """The one file of a batch holding `events`."""
    return [("hostile-000001.jsonl", event_file(events))]


def relations(engine: Engine) -> list[str]:
    """Every table, view, index and sequence of the ledger's schema."""
    return [
        name
        for (name,) in rows(
            engine,
            "SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace"
            " ORDER BY relname",
        )
    ]


def assert_outcomes_as_serial(engine: Engine, files: list[tuple[str, bytes]]) -> RunResult:
    """Every line ended as the serial runner says, state equal; a rejected line's raw bytes
    kept exactly. Returns the serial runner's result."""
    lines = ingest_files(files)
    expected = run_serial(LEDGER, [line.event for line in lines])
    assert rows(engine, "SELECT outcome FROM ledger_events ORDER BY position") == [
        (o.status,) for o in expected.outcomes
    ]
    rejected_lines = [
        line for line, o in zip(lines, expected.outcomes, strict=True) if o.status == "rejected"
    ]
    stored_rejections = [
        (reason, bytes(raw))
        for reason, raw in rows(
            engine, "SELECT reason, raw_input FROM ledger_rejections ORDER BY position"
        )
    ]
    assert stored_rejections == [
        (r.reason, line.raw) for r, line in zip(expected.rejections, rejected_lines, strict=True)
    ]
    assert dict(rows(engine, "SELECT key, value FROM accounts")) == expected.state["accounts"]
    assert (
        dict(rows(engine, "SELECT key, value FROM asset_ledger"))
        == (expected.state["asset_ledger"])
    )
    return expected


@pytest.fixture
def reader(database_url: str) -> Iterator[Login]:
    """A login in the reader role (sql/0007_roles.sql), dropped afterwards."""
    logins = Logins(database_url)
    yield logins.create("reader")
    logins.drop_all()


def test_hostile_ids_are_stored_and_shown_exactly_as_sent(
    engine: Engine, reader: Login, commit_files
) -> None:
    events = hostile_events(HOSTILE)
    files = hostile_file(events)
    before = relations(engine)

    commit_files(engine, 0, files)

    assert relations(engine) == before, "every table, view and index is still there"
    expected = assert_outcomes_as_serial(engine, files)
    assert set(expected.state["accounts"]) == set(expected.state["asset_ledger"]) == set(HOSTILE)
    assert rows(
        engine, "SELECT stream, request_id, payload FROM ledger_events ORDER BY position"
    ) == [(e.stream, e.request_id, e.payload) for e in events]
    assert rows(engine, "SELECT stream, request_id FROM ledger_rejections ORDER BY position") == [
        (r.stream, r.request_id) for r in expected.rejections
    ]
    assert rows(
        engine, "SELECT stream, request_id, payload FROM ledger_results ORDER BY position, seq"
    ) == [(r.stream, r.request_id, r.payload) for r in expected.results]
    assert rows(
        engine,
        "SELECT request_id, table_name, key, before, after FROM ledger_change_log"
        " ORDER BY position, seq",
    ) == [(c.request_id, c.table, c.key, c.before, c.after) for c in expected.changes]
    assert sorted(rows(engine, "SELECT request_id FROM ledger_requests")) == sorted(
        (o.request_id,) for o in expected.outcomes if o.status != "duplicate"
    )

    # What the read-only role sees through its views.
    account_changes = [c for c in expected.changes if c.table == "accounts"]
    last_change = {c.key: c.request_id for c in account_changes}
    # Each balance with its text in the accounts' unit, formatted by a function the reader runs.
    unit = LEDGER.tables["accounts"].unit
    assert sorted(
        rows(
            reader.engine,
            "SELECT account_id, balance, balance_text, last_request_id FROM reconciled_balances",
        )
    ) == sorted(
        (k, v, money_text(v, unit), last_change[k]) for k, v in expected.state["accounts"].items()
    )
    assert sorted(
        rows(reader.engine, "SELECT account_id, request_id, balance_after FROM account_statements")
    ) == sorted((c.key, c.request_id, c.after) for c in account_changes)
    assert sorted(
        rows(reader.engine, "SELECT request_id, stream, outcome FROM request_outcomes")
    ) == sorted(
        (o.request_id, e.stream, o.status) for o, e in zip(expected.outcomes, events, strict=True)
    )


def test_ids_too_long_to_index_end_as_the_serial_runner_says(engine: Engine, commit_files) -> None:
    """An id of 10,000 characters cannot stop the ledger: the line is applied or rejected
    exactly as the serial runner decides, and a rejected line keeps its raw bytes."""
    files = hostile_file(hostile_events(TOO_LONG + HOSTILE[:2]))
    before = relations(engine)

    summary = commit_files(engine, 0, files)

    assert relations(engine) == before
    assert summary.ingested == summary.applied + summary.rejected + summary.duplicates
    assert_outcomes_as_serial(engine, files)


# -- staging by COPY: any storable text comes back as it was --------------------------------

STORABLE_TEXT = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=200
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(texts=st.lists(STORABLE_TEXT, min_size=1, max_size=8))
@example(texts=[*HOSTILE, ""])
def test_any_storable_text_is_staged_and_read_back_unchanged(
    engine: Engine, texts: list[str]
) -> None:
    """The staging writes text through Arrow's CSV writer into COPY: quotes, separators,
    line ends, backslashes, COPY's markers and empty strings (not NULL) survive it. (One
    database for every example: a stager first empties its slot.)"""
    stager = Stager(libpq_url(engine.url.render_as_string(hide_password=False)), 0, "texts", 0)
    for i, value in enumerate(texts):
        stager.add("ledger_stage_rows", net_row(value, value, i, None, value))
    stager.commit()
    staged = rows(
        engine,
        "SELECT table_name, key, after #>> '{}' FROM ledger_stage_rows"
        " WHERE batch_id = 0 AND slot = 'texts' ORDER BY round",
    )
    assert staged == [(value, value, value) for value in texts]


# -- a batch's keys, sent to PostgreSQL as one array value -----------------------------------


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(texts=st.lists(STORABLE_TEXT, max_size=8))
@example(texts=[*HOSTILE, "", "{}", '{"a"}', "a,b", " padded "])
def test_any_storable_text_reaches_postgresql_as_itself_in_an_array_value(
    engine: Engine, texts: list[str]
) -> None:
    """The tasks' row reads and the driver's look-up of request ids send a batch's keys as
    one `text[]` value in array input form (`array_value`): quotes, backslashes, braces,
    commas, `NULL` and empty strings are keys like any other."""
    with engine.connect() as conn:
        sent = conn.exec_driver_sql("SELECT %s::text[]", (array_value(texts),)).scalar_one()
    assert sent == texts


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(numbers=st.lists(st.integers(-(2**63), 2**63 - 1), max_size=8))
@example(numbers=[-(2**63), 0, 2**63 - 1])
def test_any_int64_reaches_postgresql_as_itself_in_an_array_value(
    engine: Engine, numbers: list[int]
) -> None:
    with engine.connect() as conn:
        sent = conn.exec_driver_sql("SELECT %s::bigint[]", (array_value(numbers),)).scalar_one()
    assert sent == numbers
