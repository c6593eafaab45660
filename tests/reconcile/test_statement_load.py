"""Landed statement files are kept in PostgreSQL exactly once: every entry loaded or rejected
with its raw bytes, the same content landed again a duplicate, a file seen before not read
again, and a run that stops half-way completed by the next without doubling anything."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, date, datetime, time, timedelta

import pytest
from sqlalchemy import Engine

from ledger_engine.reconcile.entries import BAD_AMOUNT, MALFORMED_FILE
from ledger_engine.reconcile.formats import parse_statement
from ledger_engine.reconcile.sources import Source, Sources
from ledger_engine.reconcile.statement_inbox import land_statement, load_statements
from ledger_engine.reconcile.storage.statements import DUPLICATE, LOADED, SEEN, UNREADABLE
from tests.support.database import rows as database_rows
from tests.support.reconcile import csv_source
from tests.support.statements import IBAN, Entry, Statement, camt053_document

BANK = csv_source("Main bank «EUR»", "acct-000001")
SOURCES = Sources({BANK.name: BANK}, digest="d" * 64)
CAMT_BANK = Source("Daily bank", "camt053", "accounts", "EUR", 2, accounts={IBAN: "acct-000002"})
CAMT_SOURCES = Sources({CAMT_BANK.name: CAMT_BANK}, digest="c" * 64)
NOVEMBER = b"Date,Amount,Ref\n2026-11-02,100.00,R1\n2026-11-03,-2.5,R2\n2026-11-04,1.234,R3\n"
DECEMBER = b"Date,Amount,Ref\n2026-12-01,7.00,R4\n"


def rows(engine: Engine, query: str) -> list[tuple]:
    """The rows of `query`, with bytea columns as bytes."""
    return [
        tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)
        for row in database_rows(engine, query)
    ]


def test_each_entry_is_kept_loaded_or_rejected_with_its_raw_bytes(engine: Engine, tmp_path):
    land_statement(tmp_path, BANK, "2026-11.csv", NOVEMBER)
    (tmp_path / BANK.folder / ".still-being-written.csv.tmp").write_bytes(b"Date,Amount")

    (outcome,) = load_statements(engine, SOURCES, tmp_path)

    assert (outcome.source, outcome.file_name, outcome.outcome) == (
        BANK.name,
        "2026-11.csv",
        LOADED,
    )
    assert (outcome.entries, outcome.rejected) == (2, 1)
    assert rows(
        engine,
        "SELECT position, table_name, account, amount, reference, raw_input"
        " FROM ledger_statement_entries ORDER BY position",
    ) == [
        (2, "accounts", "acct-000001", 10_000, "R1", b"2026-11-02,100.00,R1\n"),
        (3, "accounts", "acct-000001", -250, "R2", b"2026-11-03,-2.5,R2\n"),
    ]
    assert rows(engine, "SELECT position, reason, raw_input FROM ledger_statement_rejections") == [
        (4, BAD_AMOUNT, b"2026-11-04,1.234,R3\n")
    ]
    assert rows(
        engine, "SELECT source, entries, rejected, sources_digest FROM ledger_statement_files"
    ) == [(BANK.name, 2, 1, "d" * 64)]


def test_a_file_seen_before_is_not_read_again_and_changes_nothing(engine: Engine, tmp_path):
    path = land_statement(tmp_path, BANK, "2026-11.csv", NOVEMBER)
    load_statements(engine, SOURCES, tmp_path)

    assert load_statements(engine, SOURCES, tmp_path) == []
    os.utime(path, ns=(path.stat().st_mtime_ns + 10**9,) * 2)  # touched: read, and known
    (touched,) = load_statements(engine, SOURCES, tmp_path)
    assert touched.outcome == SEEN
    assert load_statements(engine, SOURCES, tmp_path) == []
    assert rows(engine, "SELECT count(*) FROM ledger_statement_entries") == [(2,)]


def test_the_same_content_landed_under_another_name_is_a_duplicate(engine: Engine, tmp_path):
    land_statement(tmp_path, BANK, "2026-11.csv", NOVEMBER)
    (first,) = load_statements(engine, SOURCES, tmp_path)
    shutil.copy(tmp_path / BANK.folder / "2026-11.csv", tmp_path / BANK.folder / "copy.csv")

    (again,) = load_statements(engine, SOURCES, tmp_path)

    assert (again.file_name, again.outcome, again.file_id) == ("copy.csv", DUPLICATE, first.file_id)
    assert rows(engine, "SELECT count(*) FROM ledger_statement_entries") == [(2,)]
    assert rows(
        engine, "SELECT file_name, outcome FROM ledger_statement_landings ORDER BY file_name"
    ) == [("2026-11.csv", LOADED), ("copy.csv", DUPLICATE)]


def test_a_file_that_cannot_be_read_is_kept_whole_as_one_rejection(engine: Engine, tmp_path):
    land_statement(tmp_path, BANK, "broken.csv", b"Datum;Betrag\n02.11.2026;5\n")
    (outcome,) = load_statements(engine, SOURCES, tmp_path)
    assert (outcome.entries, outcome.rejected) == (0, 1)
    assert rows(engine, "SELECT position, reason, raw_input FROM ledger_statement_rejections") == [
        (0, MALFORMED_FILE, b"Datum;Betrag\n02.11.2026;5\n")
    ]


def test_a_run_that_stops_half_way_is_completed_by_the_next_exactly_once(engine: Engine, tmp_path):
    land_statement(tmp_path, BANK, "2026-11.csv", NOVEMBER)
    land_statement(tmp_path, BANK, "2026-12.csv", DECEMBER)

    def stop(outcome) -> None:
        raise KeyboardInterrupt  # the process dies after the first file's commit

    with pytest.raises(KeyboardInterrupt):
        load_statements(engine, SOURCES, tmp_path, on_file=stop)
    assert rows(engine, "SELECT file_name FROM ledger_statement_files") == [("2026-11.csv",)]

    (rest,) = load_statements(engine, SOURCES, tmp_path)

    assert (rest.file_name, rest.outcome) == ("2026-12.csv", LOADED)
    parsed = [parse_statement(raw, BANK) for raw in (NOVEMBER, DECEMBER)]
    assert rows(engine, "SELECT count(*) FROM ledger_statement_entries") == [
        (sum(len(p.entries) for p in parsed),)
    ]
    assert rows(engine, "SELECT count(*) FROM ledger_statement_rejections") == [
        (sum(len(p.rejections) for p in parsed),)
    ]


def test_a_file_of_two_statements_of_one_account_keeps_both_entries_and_both_balances(
    engine: Engine, tmp_path
):
    # A month of daily statements in one file, the layout many banks send: here two days of
    # one account, each with its own opening and closing balance.
    first_day, second_day = date(2026, 11, 2), date(2026, 11, 3)
    days = [
        (
            first_day,
            50_000,
            [Entry(12_345, first_day, reference="E2E-1"), Entry(-2_000, first_day)],
        ),
        (second_day, 60_345, [Entry(70_000, second_day, reference="E2E-2")]),
    ]
    statements = [
        Statement(
            IBAN,
            entries=entries,
            opening=opening,
            closing=opening + sum(e.amount for e in entries),
            opening_date=day,
            closing_date=day,
            statement_id=f"STMT-{day.isoformat()}",
        )
        for day, opening, entries in days
    ]
    land_statement(tmp_path, CAMT_BANK, "2026-11.xml", camt053_document(statements))

    (outcome,) = load_statements(engine, CAMT_SOURCES, tmp_path)

    assert (outcome.outcome, outcome.entries, outcome.rejected) == (LOADED, 3, 0)
    # Entries are numbered across the whole file, in document order.
    assert rows(
        engine,
        "SELECT position, account, amount, booking_date, reference FROM ledger_statement_entries"
        " ORDER BY position",
    ) == [
        (1, "acct-000002", 12_345, first_day, "E2E-1"),
        (2, "acct-000002", -2_000, first_day, None),
        (3, "acct-000002", 70_000, second_day, "E2E-2"),
    ]
    # A closing balance dated by a bare day holds at that day's end (the next midnight, UTC);
    # the day is kept as the bank gave it.
    assert rows(
        engine,
        "SELECT statement, account, opening, closing, stated, as_of"
        " FROM ledger_statement_balances ORDER BY statement",
    ) == [
        (
            1,
            "acct-000002",
            50_000,
            60_345,
            "2026-11-02",
            datetime.combine(second_day, time(0), tzinfo=UTC),
        ),
        (
            2,
            "acct-000002",
            60_345,
            130_345,
            "2026-11-03",
            datetime.combine(second_day + timedelta(days=1), time(0), tzinfo=UTC),
        ),
    ]


def test_a_file_that_cannot_be_read_from_disk_waits_with_its_reason_and_the_run_goes_on(
    engine: Engine, tmp_path
):
    land_statement(tmp_path, BANK, "2026-10.csv", DECEMBER.replace(b"R4", b"R0"))
    land_statement(tmp_path, BANK, "2026-11.csv", NOVEMBER)
    land_statement(tmp_path, BANK, "2026-12.csv", DECEMBER)
    november = tmp_path / BANK.folder / "2026-11.csv"

    def remove_november(outcome) -> None:  # a person takes the file away while the run goes
        if outcome.file_name == "2026-10.csv":
            november.rename(tmp_path / "aside.csv")

    first = load_statements(engine, SOURCES, tmp_path, on_file=remove_november)

    assert [(o.file_name, o.outcome) for o in first] == [
        ("2026-10.csv", LOADED),
        ("2026-11.csv", UNREADABLE),
        ("2026-12.csv", LOADED),
    ]
    assert first[1].reason is not None
    assert first[1].reason.startswith("cannot be read: No such file or directory"), first[1]
    assert "the next run takes it" in first[1].reason
    # Not recorded: once it is back, the next run loads it like any other.
    (tmp_path / "aside.csv").rename(november)
    (again,) = load_statements(engine, SOURCES, tmp_path)
    assert (again.file_name, again.outcome, again.entries, again.rejected) == (
        "2026-11.csv",
        LOADED,
        2,
        1,  # 1.234 EUR: more decimals than the unit has
    )
