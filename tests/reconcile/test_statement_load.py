"""Landed statement files are kept in PostgreSQL exactly once: every entry loaded or rejected
with its raw bytes, the same content landed again a duplicate, a file seen before not read
again, and a run that stops half-way completed by the next without doubling anything."""

from __future__ import annotations

import os
import shutil

import pytest
from sqlalchemy import Engine

from ledger_engine.reconcile.entries import BAD_AMOUNT, MALFORMED_FILE
from ledger_engine.reconcile.formats import parse_statement
from ledger_engine.reconcile.sources import Sources
from ledger_engine.reconcile.statement_inbox import land_statement, load_statements
from ledger_engine.reconcile.storage.statements import DUPLICATE, LOADED, SEEN
from tests.support.database import rows as database_rows
from tests.support.reconcile import csv_source

BANK = csv_source("Main bank «EUR»", "acct-000001")
SOURCES = Sources({BANK.name: BANK}, digest="d" * 64)
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
