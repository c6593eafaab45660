"""The streaming checkpoint of one ledger in one database, and the checks that keep it so.

Structured Streaming's checkpoint remembers which landed files each batch id took; the commit
trusts it to follow the database's batches. Pointing `LEDGER_DATABASE_URL` at another database
with the same checkpoint would plan batch 5 for a database that has none (and skip every file
the first database took). So `LEDGER_CHECKPOINT` is a root that holds one checkpoint per
database and ledger, named by the ledger schema's identity (`ledger_engine.store.identity`):

    $LEDGER_CHECKPOINT/<schema>-<database id>/identity.json   whose it is, for people and checks
    $LEDGER_CHECKPOINT/<schema>-<database id>/stream/         Spark's checkpoint

Switching databases back and forth just works: each database and ledger has its own. What
cannot be told safely is refused (`CheckpointMismatch`, naming both sides and what to do),
before anything runs and without touching any checkpoint:
- a checkpoint of the earlier layout (Spark's logs right in the root), which records no owner;
- a folder whose `identity.json` names another ledger or database (renamed or copied by hand);
- a checkpoint whose batches disagree with the database's: a database behind it (restored
  from an earlier backup, or a copy taken earlier: a copy keeps its id) or ahead of it (its
  batches run by another checkpoint), and a new checkpoint for a database that already has
  batches (the one that ran them was moved or deleted).
The checks run under the run lease, so no other run moves either side meanwhile.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from sqlalchemy import Engine

from ledger_engine.errors import CheckpointMismatch
from ledger_engine.runtime.spark.streaming import logged_batches
from ledger_engine.store.commit import last_batch_id
from ledger_engine.store.identity import LedgerIdentity, ledger_identity

IDENTITY_FILE = "identity.json"
STREAM_FOLDER = "stream"
# What Spark keeps right in a checkpoint folder: found in the root, it is the earlier layout.
_SPARK_ENTRIES = ("metadata", "offsets", "commits", "sources")


def checkpoint_folder(root: Path, identity: LedgerIdentity) -> Path:
    """The folder of the checkpoint of `identity`'s ledger and database under `root`."""
    return root / identity.key


def stream_checkpoint(root: Path, engine: Engine) -> Path:
    """Spark's checkpoint location for the ledger and database `engine` reaches, after the
    checks of the module (raising `CheckpointMismatch`); records its identity beside it."""
    identity = ledger_identity(engine)
    _refuse_earlier_layout(root, identity, last_batch_id(engine))
    folder = checkpoint_folder(root, identity)
    recorded = _recorded_identity(folder)
    if recorded is not None and not recorded.same_ledger(identity):
        raise CheckpointMismatch(
            f"the streaming checkpoint in {folder} belongs to {recorded.describe()}, not to "
            f"{identity.describe()}: its folder was renamed or copied by hand. Nothing was "
            f"run. Move it back to {checkpoint_folder(root, recorded)}; the next run then "
            f"starts a checkpoint of this ledger in {folder}."
        )
    stream = folder / STREAM_FOLDER
    planned, done = logged_batches(stream)
    problem = disagreement(planned, done, last_batch_id(engine))
    if problem is not None:
        owner = (recorded or identity).describe()
        raise CheckpointMismatch(
            f"the streaming checkpoint in {stream}, of {owner}, does not agree with "
            f"{identity.describe()}: {problem}. Nothing was run. Run this database with the "
            "checkpoint taken with it (restore or copy it into that folder), or point "
            "LEDGER_DATABASE_URL back at the database this checkpoint ran."
        )
    _record_identity(folder, identity)
    return stream


def disagreement(planned: int | None, done: int | None, last: int | None) -> str | None:
    """Why a checkpoint that planned batches up to `planned` and marked done up to `done`
    cannot drive a database whose last committed batch is `last` (None: none); None if it
    can: the database has committed exactly the batches marked done, or the one planned after
    them too (a run died between its commit and the checkpoint's mark; the next run replays
    that batch as a no-op)."""
    if last == done or (planned is not None and planned != done and last == planned):
        return None
    reached = f"batches 0 to {done}" if done is not None else "no batch"
    has = f"batches 0 to {last}" if last is not None else "no batch"
    if planned is None:
        return (
            f"the checkpoint is new, yet the database has committed {has}: the checkpoint "
            "that ran them was moved or deleted"
        )
    if last is None or last < (done if done is not None else planned):
        return (
            f"the checkpoint ran {reached}, and the database has committed {has}: the "
            "database is behind its checkpoint (restored from an earlier backup, or a copy "
            "of the database taken before them)"
        )
    return (
        f"the database has committed {has}, and the checkpoint ran {reached}: the batches "
        "after those were committed through another checkpoint (a copy of this one, or of "
        "the database)"
    )


def _refuse_earlier_layout(root: Path, identity: LedgerIdentity, last: int | None) -> None:
    """Refuse a checkpoint of the earlier layout (Spark's logs right in `root`): it records
    neither its database nor its ledger, so it is left for a person to place."""
    if not any((root / entry).exists() for entry in _SPARK_ENTRIES):
        return
    _, done = logged_batches(root)
    folder = checkpoint_folder(root, identity)
    ran = f"batches 0 to {done}" if done is not None else "no batch"
    has = f"batches 0 to {last}" if last is not None else "no batch"
    if last is None and done is not None:
        verdict = (
            f"It is not this ledger's: this database has committed no batch, the checkpoint "
            f"ran {ran}. Keep it for the database it belongs to: move it away (mv {root} "
            f"{root}.other), and the next run starts this ledger's checkpoint in {folder}."
        )
    else:
        verdict = (
            f"It ran {ran}; this database has committed {has}. If it is this ledger's, move "
            f"it into place: mv {root} {root}.old && mkdir -p {folder} && mv {root}.old "
            f"{folder / STREAM_FOLDER}. If it belongs to another database, move it away "
            f"(mv {root} {root}.other) and keep it for that one."
        )
    raise CheckpointMismatch(
        f"the streaming checkpoint in {root} records no database or ledger (it was made "
        "before checkpoints were kept per database and ledger), so it cannot be told whether "
        f"it is that of {identity.describe()}. Nothing was run. {verdict}"
    )


def _recorded_identity(folder: Path) -> LedgerIdentity | None:
    path = folder / IDENTITY_FILE
    if not path.exists():
        return None
    return LedgerIdentity.from_json(json.loads(path.read_text(encoding="utf-8")))


def _record_identity(folder: Path, identity: LedgerIdentity) -> None:
    """Write `identity.json` (whole: a hidden name, then a rename), with the database's name
    and server as seen now."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / IDENTITY_FILE
    text = json.dumps(identity.to_json(), indent=2, sort_keys=True) + "\n"
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return
    hidden = folder / f".{IDENTITY_FILE}.{os.getpid()}"
    hidden.write_text(text, encoding="utf-8")
    os.replace(hidden, path)
