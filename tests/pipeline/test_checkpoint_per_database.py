"""One streaming checkpoint per database and ledger: `LEDGER_DATABASE_URL` switched back and
forth over one data folder just works, and what cannot be told safely is refused, naming both
sides, with nothing run and no checkpoint touched (`ledger_engine.pipeline.checkpoint`)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import make_url

from ledger_engine.apps.bank.generator import generate_events
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.audit.rederivation.oracle import serial_differences
from ledger_engine.cli import main
from ledger_engine.config import Settings
from ledger_engine.errors import CheckpointMismatch
from ledger_engine.pipeline.checkpoint import (
    IDENTITY_FILE,
    STREAM_FOLDER,
    checkpoint_folder,
    disagreement,
)
from ledger_engine.pipeline.event_inbox import write_event_files
from ledger_engine.pipeline.job import run_pipeline
from ledger_engine.store.database import connect
from ledger_engine.store.identity import ledger_identity
from tests.support.database import rows

EVENTS = generate_events(1_200, accounts=40, seed=31)


def land(settings: Settings, part: int) -> None:
    """Land the `part`-th 200 events (two files) in the shared inbox."""
    chunk = EVENTS[part * 200 : (part + 1) * 200]
    write_event_files(chunk, settings.inbox, events_per_file=100, prefix=f"part{part}")


def settings_on(data_dir: Path, url: str) -> Settings:
    """One data folder (inbox, checkpoint root), this database."""
    return Settings.from_env(
        {
            "LEDGER_DATA_DIR": str(data_dir),
            "LEDGER_DATABASE_URL": url,
            "LEDGER_FILES_PER_BATCH": "2",
        }
    )


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under `folder`, with its size and modification time: what "untouched" means."""
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def batch_ids(url: str) -> list[int]:
    engine = connect(url)
    try:
        return [b for (b,) in rows(engine, "SELECT batch_id FROM ledger_batches ORDER BY 1")]
    finally:
        engine.dispose()


def identity_of(url: str):
    engine = connect(url)
    try:
        return ledger_identity(engine)
    finally:
        engine.dispose()


def differences(url: str, inbox: Path) -> list[str]:
    engine = connect(url)
    try:
        return serial_differences(engine, build_ledger(), inbox)
    finally:
        engine.dispose()


def test_switching_databases_back_and_forth_keeps_a_checkpoint_for_each(
    make_database_url: Callable[..., str], spark, tmp_path: Path
) -> None:
    url_a, url_b = make_database_url(), make_database_url()
    on_a, on_b = settings_on(tmp_path, url_a), settings_on(tmp_path, url_b)
    identity_a, identity_b = identity_of(url_a), identity_of(url_b)
    assert identity_a.database_id != identity_b.database_id
    folder_a = checkpoint_folder(on_a.checkpoint, identity_a)
    folder_b = checkpoint_folder(on_b.checkpoint, identity_b)

    land(on_a, 0)
    assert [b.batch_id for b in run_pipeline(on_a, spark=spark).batches] == [0]
    a_before = snapshot(folder_a)

    # B, new, takes every landed file from the start (its own batch 0), and A's checkpoint
    # is left as it was.
    land(on_b, 1)
    assert [b.batch_id for b in run_pipeline(on_b, spark=spark).batches] == [0, 1]
    assert snapshot(folder_a) == a_before
    assert differences(url_b, tmp_path / "inbox") == []

    # A again: only what it has not taken, as batches following its own.
    land(on_a, 2)
    assert [b.batch_id for b in run_pipeline(on_a, spark=spark).batches] == [1, 2]
    assert differences(url_a, tmp_path / "inbox") == []
    # And B again, for what landed since its last run.
    assert [b.batch_id for b in run_pipeline(on_b, spark=spark).batches] == [2]
    assert differences(url_b, tmp_path / "inbox") == []

    assert sorted(p.name for p in on_a.checkpoint.iterdir()) == sorted(
        [folder_a.name, folder_b.name]
    )
    for folder, url in ((folder_a, url_a), (folder_b, url_b)):
        recorded = json.loads((folder / IDENTITY_FILE).read_text(encoding="utf-8"))
        assert recorded["database"] == make_url(url).database
        assert recorded["schema"] == "bank"
        assert (folder / STREAM_FOLDER / "commits").is_dir()


def test_a_checkpoint_of_the_earlier_layout_is_refused_until_a_person_places_it(
    make_database_url: Callable[..., str],
    spark,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys,
) -> None:
    url_a, url_b = make_database_url(), make_database_url()
    on_a = settings_on(tmp_path, url_a)
    land(on_a, 0)
    run_pipeline(on_a, spark=spark)
    # As an earlier version left it: Spark's checkpoint right in LEDGER_CHECKPOINT.
    root = on_a.checkpoint
    stream = checkpoint_folder(root, identity_of(url_a)) / STREAM_FOLDER
    shutil.move(stream, tmp_path / "flat")
    shutil.rmtree(root)
    shutil.move(tmp_path / "flat", root)
    before = snapshot(root)
    land(on_a, 1)

    # A new database: `ledger run` says the checkpoint is not its own, and where to move it.
    monkeypatch.setenv("LEDGER_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("LEDGER_DATABASE_URL", url_b)
    assert main(["run"]) == 2
    said = " ".join(capsys.readouterr().out.split())
    identity_b = identity_of(url_b)
    assert f"the streaming checkpoint in {root} records no database or ledger" in said
    assert identity_b.describe() in said
    assert "It is not this ledger's: this database has committed no batch" in said
    assert f"mv {root} {root}.other" in said
    assert batch_ids(url_b) == []
    assert snapshot(root) == before

    # Database A: the same refusal, since the checkpoint cannot say whose it is, with the
    # way to place it if it is A's.
    with pytest.raises(CheckpointMismatch) as refused:
        run_pipeline(on_a, spark=spark)
    said = " ".join(str(refused.value).split())
    folder_a = checkpoint_folder(root, identity_of(url_a))
    assert identity_of(url_a).describe() in said
    assert "It ran batches 0 to 0; this database has committed batches 0 to 0" in said
    placing = f"mv {root} {root}.old && mkdir -p {folder_a} && mv {root}.old {folder_a / 'stream'}"
    assert placing in said
    assert snapshot(root) == before and batch_ids(url_a) == [0]

    # Placed as the message says, A goes on from its batch 0, and B starts its own.
    shutil.move(root, f"{root}.old")
    folder_a.mkdir(parents=True)
    shutil.move(f"{root}.old", folder_a / STREAM_FOLDER)
    assert [b.batch_id for b in run_pipeline(on_a, spark=spark).batches] == [1]
    assert differences(url_a, tmp_path / "inbox") == []
    on_b = settings_on(tmp_path, url_b)
    assert [b.batch_id for b in run_pipeline(on_b, spark=spark).batches] == [0, 1]
    assert differences(url_b, tmp_path / "inbox") == []


def test_a_copy_of_a_database_behind_the_checkpoint_it_shares_is_refused(
    make_database_url: Callable[..., str], spark, tmp_path: Path
) -> None:
    url_a = make_database_url()
    on_a = settings_on(tmp_path, url_a)
    land(on_a, 0)
    run_pipeline(on_a, spark=spark)
    url_copy = make_database_url(template=url_a)  # keeps A's id: as a backup restored
    assert identity_of(url_copy).database_id == identity_of(url_a).database_id
    land(on_a, 1)
    run_pipeline(on_a, spark=spark)
    folder = checkpoint_folder(on_a.checkpoint, identity_of(url_a))
    before = snapshot(folder)

    with pytest.raises(CheckpointMismatch) as refused:
        run_pipeline(settings_on(tmp_path, url_copy), spark=spark)
    said = " ".join(str(refused.value).split())
    assert f"database {make_url(url_a).database!r}" in said  # the checkpoint's, as recorded
    assert identity_of(url_copy).describe() in said  # and the run's
    assert "the checkpoint ran batches 0 to 1, and the database has committed batches 0 to 0" in (
        said
    )
    assert "the database is behind its checkpoint" in said
    assert batch_ids(url_copy) == [0] and snapshot(folder) == before

    # A copy of the checkpoint taken with it is how a copy goes on: deleting A's checkpoint
    # instead leaves A with batches and a new checkpoint, which is refused too.
    shutil.rmtree(folder / STREAM_FOLDER)
    with pytest.raises(CheckpointMismatch, match="the checkpoint is new, yet the database has"):
        run_pipeline(on_a, spark=spark)


def next_batch(planned: int | None, done: int | None) -> int:
    """The batch id Spark runs next from a checkpoint: the one it planned and never marked
    done, else the one after the last done."""
    if planned is not None and planned != done:
        return planned
    return 0 if done is None else done + 1


@given(
    done=st.none() | st.integers(0, 6),
    unfinished=st.booleans(),
    last=st.none() | st.integers(0, 8),
)
def test_a_checkpoint_may_drive_a_database_exactly_when_its_next_batch_commits_there(
    done: int | None, unfinished: bool, last: int | None
) -> None:
    """Oracle: the commit takes batch `n` iff it follows the last (`n == last + 1`), and
    a replay of an unfinished batch the database has committed is a no-op (`n == last`)."""
    planned = (0 if done is None else done + 1) if unfinished else done
    n = next_batch(planned, done)
    follows = n == (0 if last is None else last + 1)
    replays = unfinished and last is not None and n == last
    assert (disagreement(planned, done, last) is None) == (follows or replays)
