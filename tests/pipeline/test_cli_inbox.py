"""What became of every file and line, without SQL: `ledger run` names the inbox it looked in
and every file it leaves aside and why; `ledger inbox` lists the files taken, waiting and
ignored; `ledger rejections [--file F] [--batch N]` the rejected lines with their file, line,
reason and raw bytes. Run as `.venv/bin/ledger`, against the test server."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ledger_engine.cli.statuses import EXIT_PIPE_CLOSED
from tests.support.bank import deposit
from tests.support.events import event_file
from tests.support.ledger_command import LEDGER, ledger_env, libpq_form, run_ledger

TAKEN = event_file([deposit("d1", "alice", 500), deposit("d2", "bob", 700)])
# Line 2 is no JSON, line 3 a deposit of a negative amount: both rejected.
REJECTING = (
    event_file([deposit("d3", "alice", 100)])
    + b"{not json\n"
    + event_file([deposit("d4", "alice", -5)])
)
LONG_AGO = 1_000_000_000  # 2001: before any batch of this test committed


@pytest.fixture(scope="module")
def committed(
    module_make_database_url: Callable[..., str], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str]:
    """A bank ledger whose batch 0 took `a0.jsonl` and `b0.jsonl`, committed by `ledger run`
    (its checkpoint in the data folder): the environment that ran it."""
    data = tmp_path_factory.mktemp("inbox_data")
    (data / "inbox").mkdir()
    (data / "inbox" / "a0.jsonl").write_bytes(TAKEN)
    (data / "inbox" / "b0.jsonl").write_bytes(REJECTING)
    env = ledger_env(data, libpq_form(module_make_database_url()))
    done = run_ledger(env, "run")
    assert done.returncode == 0, done.stdout + done.stderr
    # The batch's line, as a log keeps it: whole, however narrow a terminal would have been.
    [batch] = [line for line in done.stdout.splitlines() if line.startswith("micro-batch 0: ")]
    assert batch.startswith("micro-batch 0: 5 events, 3 applied, 2 rejected, 0 duplicates in ")
    assert batch.endswith(" events/s"), batch
    return env


def inbox_of(tmp_path: Path, files: dict[str, bytes], *, landed_before: set[str]) -> Path:
    """An inbox holding `files`; those named in `landed_before` landed before batch 0, the
    others since."""
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for name, content in files.items():
        (inbox / name).write_bytes(content)
        if name in landed_before:
            os.utime(inbox / name, (LONG_AGO, LONG_AGO))
    return inbox


def aside(tmp_path: Path) -> Path:
    """An inbox with a0.jsonl as batch 0 took it, a corrected b0.jsonl landed again since, a
    file of JSON lines under another extension and a note."""
    files = {
        "a0.jsonl": TAKEN,
        "b0.jsonl": REJECTING.replace(b"-5", b"5"),
        "more.json": TAKEN,
        "README.txt": b"drop event files here\n",
    }
    return inbox_of(tmp_path, files, landed_before={"a0.jsonl"})


def test_run_names_the_inbox_and_every_file_it_leaves_aside(committed, tmp_path: Path):
    inbox = aside(tmp_path)
    env = {**committed, "LEDGER_INBOX": str(inbox)}
    done = run_ledger(env, "run")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert f"nothing new to commit in the inbox {inbox}/" in lines[0], lines
    assert any(
        line.startswith("ignored b0.jsonl: landed again after batch 0 took a file of this name")
        and "under a new name" in line
        for line in lines
    ), lines
    assert any(line.startswith("ignored more.json: not an event file") for line in lines)
    assert any(line.startswith("ignored README.txt: not an event file") for line in lines)
    assert "a0.jsonl" not in done.stdout  # taken as it should be: nothing to say
    assert "│" not in done.stdout  # no table of zeros


def test_inbox_lists_files_taken_waiting_and_ignored(committed, tmp_path: Path):
    inbox = aside(tmp_path)
    (inbox / "c0.jsonl").write_bytes(TAKEN)
    env = {**committed, "LEDGER_INBOX": str(inbox)}
    done = run_ledger(env, "inbox")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"inbox {inbox}/: 1 taken, 1 waiting, 3 ignored"
    assert "  a0.jsonl: taken by batch 0" in lines
    assert "  c0.jsonl: waiting for the next run" in lines
    assert any(line.startswith("  b0.jsonl: ignored: landed again after batch 0") for line in lines)

    listed = json.loads(run_ledger(env, "inbox", "--json").stdout)
    assert listed["inbox"] == str(inbox)
    states = {f["name"]: (f["state"], f["batch_id"]) for f in listed["files"]}
    assert states == {
        "README.txt": ("ignored", None),
        "a0.jsonl": ("taken", 0),
        "b0.jsonl": ("ignored", 0),
        "c0.jsonl": ("waiting", None),
        "more.json": ("ignored", None),
    }
    assert all(f["why"] for f in listed["files"] if f["state"] == "ignored")


def test_rejections_show_file_line_reason_and_raw_bytes(committed):
    env = committed
    done = run_ledger(env, "rejections")
    assert done.returncode == 0, done.stderr
    assert "b0.jsonl line 2: invalid_event: " in done.stdout, done.stdout
    assert "raw: {not json" in done.stdout
    assert "b0.jsonl line 3: " in done.stdout and '"amount":-5' in done.stdout.replace(" ", "")

    listed = json.loads(run_ledger(env, "rejections", "--file", "b0.jsonl", "--json").stdout)
    rows = [(r["file"], r["line"], r["batch_id"]) for r in listed["rejections"]]
    assert rows == [("b0.jsonl", 2, 0), ("b0.jsonl", 3, 0)]
    assert listed["rejections"][0]["raw"] == "{not json"
    assert all(r["reason"] and r["detail"] for r in listed["rejections"])

    assert json.loads(run_ledger(env, "rejections", "--file", "a0.jsonl", "--json").stdout) == {
        "rejections": []
    }
    none = run_ledger(env, "rejections", "--batch", "1")
    assert (none.returncode, none.stdout) == (0, "no rejected line in batch 1\n")


def test_a_reader_that_stops_early_ends_the_command_quietly(committed, tmp_path: Path):
    """`ledger inbox | head -1`: the reader closing the pipe is no failure of the command's to
    explain; it stops at once, says nothing and exits as a shell reports a closed pipe."""
    inbox = inbox_of(
        tmp_path, {f"note-{n:05}.txt": b"x\n" for n in range(3000)}, landed_before=set()
    )
    env = {**committed, "LEDGER_INBOX": str(inbox)}
    reader = subprocess.Popen(
        [str(LEDGER), "inbox"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert reader.stdout is not None and reader.stderr is not None
    assert reader.stdout.readline().startswith(b"inbox ")
    reader.stdout.close()
    status = reader.wait(timeout=120)
    assert reader.stderr.read() == b""
    assert status == EXIT_PIPE_CLOSED
