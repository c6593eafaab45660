"""Landing event files in the inbox (`ledger_engine.pipeline.event_inbox`): compact JSON lines,
files numbered in event order, each appearing complete under its final name, landing one
millisecond after another so that Spark's file source takes them in order."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

from ledger_engine import Event
from ledger_engine.apps.bank.generator import generate_events
from ledger_engine.core.ingest import event_to_line
from ledger_engine.pipeline import event_inbox as inbox
from ledger_engine.pipeline.event_inbox import write_event_files
from tests.support.bank import deposit


def line_to_event(line: str) -> Event:
    envelope = json.loads(line)
    assert set(envelope) == {"stream", "request_id", "payload"}
    return Event(envelope["stream"], envelope["request_id"], envelope["payload"])


def test_an_event_line_is_a_compact_json_envelope():
    line = event_to_line(deposit("r1", "acct-a", 5, asset="asset-a", asset_amount=1))
    assert line == (
        '{"stream":"deposits","request_id":"r1","payload":{"account_id":"acct-a",'
        '"asset_id":"asset-a","amount":5,"asset_amount":1}}'
    )


def test_an_event_without_request_id_is_written_with_null():
    line = event_to_line(Event("deposits", None, {"amount": 1}))
    assert json.loads(line)["request_id"] is None


def test_event_files_round_trip(tmp_path: Path):
    events = generate_events(
        2_500, accounts=40, seed=12, bad_fraction=0.05, duplicate_fraction=0.05
    )
    paths = write_event_files(events, tmp_path / "inbox", events_per_file=1_000)
    lines = [line for path in paths for line in path.read_text(encoding="utf-8").splitlines()]
    assert [line_to_event(line) for line in lines] == events


def test_event_files_are_numbered_in_event_order_with_full_files_first(tmp_path: Path):
    events = generate_events(25, accounts=5, seed=0)
    paths = write_event_files(events, tmp_path, events_per_file=10, prefix="bank")
    assert [p.name for p in paths] == [
        "bank-000000.jsonl",
        "bank-000001.jsonl",
        "bank-000002.jsonl",
    ]
    assert [len(p.read_text().splitlines()) for p in paths] == [10, 10, 5]
    assert line_to_event(paths[1].read_text().splitlines()[0]) == events[10]


def test_every_line_of_an_event_file_ends_in_a_newline(tmp_path: Path):
    paths = write_event_files(generate_events(7, accounts=5, seed=0), tmp_path, events_per_file=3)
    for path in paths:
        text = path.read_text(encoding="utf-8")
        assert text.endswith("\n")
        assert text.count("\n") == len(text.splitlines())


def test_writing_no_events_writes_no_files(tmp_path: Path):
    assert write_event_files([], tmp_path / "inbox") == []
    assert list((tmp_path / "inbox").iterdir()) == []


def test_event_files_appear_complete_under_their_final_name(tmp_path: Path, monkeypatch):
    """Each file is written under a temporary name that is not *.jsonl, then renamed."""
    real_replace = os.replace
    seen: list[tuple[str, list[int]]] = []

    def watching_replace(source, target):
        source, target = Path(source), Path(target)
        assert source.parent == target.parent == tmp_path
        assert not target.exists()
        complete = [len(p.read_text().splitlines()) for p in sorted(tmp_path.glob("*.jsonl"))]
        seen.append((source.name, complete))
        real_replace(source, target)

    monkeypatch.setattr(inbox.os, "replace", watching_replace)
    write_event_files(generate_events(9, accounts=3, seed=0), tmp_path, events_per_file=4)
    assert [name for name, _ in seen] == [
        ".events-000000.jsonl.tmp",
        ".events-000001.jsonl.tmp",
        ".events-000002.jsonl.tmp",
    ]
    assert [complete for _, complete in seen] == [[], [4], [4, 4]]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "events-000000.jsonl",
        "events-000001.jsonl",
        "events-000002.jsonl",
    ]


def test_event_files_land_in_order_of_their_modification_milliseconds(tmp_path: Path):
    """Spark's file source orders files by modification time in milliseconds (and files of one
    millisecond as the directory lists them): files written within a millisecond of each
    other must still land one after another."""
    paths = write_event_files(generate_events(60, accounts=3, seed=0), tmp_path, events_per_file=1)
    landed_ms = [os.stat(p).st_mtime_ns // 1_000_000 for p in paths]
    assert all(a < b for a, b in itertools.pairwise(landed_ms)), landed_ms
