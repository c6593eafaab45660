"""Committing batches without Spark, for tests whose point is what comes after the commit
(reconciliation over many generated histories) and which cannot pay a Spark job per batch.

`SerialCommits` executes each batch with the serial runner, the reference every runner equals
(`ledger_engine.runtime.serial`), continuing one run from batch to batch, stages the outcome as
one task's journal part (`ledger_engine.store.staging`) and commits it through the store's own
exactly-once commit (`ledger_engine.store.commit.commit_staged`), with its checks, under a run
lease. What it writes is what the pipeline writes for the same files
(`tests/pipeline/test_serial_commits.py` holds the two side by side): the same event log,
change log, results, request ids, table rows, Merkle roots and batch row hash.

Only batches whose every event is applied are taken (a rejection or duplicate raises): the
tests that use it build their ledgers from valid, distinct events.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from sqlalchemy import Engine

from ledger_engine.audit.rederivation.expected import event_ends
from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.core.ingest import ingest_files, nonblank_lines
from ledger_engine.core.records import APPLIED, Event
from ledger_engine.pipeline.job import FileInfo, input_fingerprint
from ledger_engine.runtime.serial import SerialRun
from ledger_engine.store.commit import CommitReport, StagedBatch, commit_staged
from ledger_engine.store.database import libpq_url
from ledger_engine.store.lease import run_lease
from ledger_engine.store.merkle import MODULUS, bucket_deltas
from ledger_engine.store.staging import Stager, change_row, event_row, result_row

Files = Sequence[tuple[str, bytes]]


class SerialCommits:
    """The batches of one ledger committed one after another into `engine`'s database, from
    batch 0 (the database must hold none yet)."""

    def __init__(self, engine: Engine, ledger: StreamingLedger) -> None:
        self.engine = engine
        self.ledger = ledger
        self.run = SerialRun(ledger)
        self.next_batch = 0

    def commit(self, files: Files) -> CommitReport:
        """Execute and commit the next batch: the events of `files` (name, content)."""
        batch_id = self.next_batch
        assert all("/" not in name for name, _ in files), "file names, as the pipeline's"
        lines = ingest_files(files)
        events = [line.event for line in lines]
        assert all(e is not None for e in events), "SerialCommits takes valid lines only"
        ends = list(event_ends(self.run.run(events)))
        assert [end.status for end in ends] == [APPLIED] * len(ends), "only applied events"
        dsn = libpq_url(self.engine.url.render_as_string(hide_password=False))
        with run_lease(self.engine, "pytest SerialCommits") as lease:
            stager = Stager(dsn, batch_id, "round0:0", lease.epoch)
            nets: dict[tuple[str, object], list] = {}  # (table, key) -> [before, after]
            for line, end in zip(lines, ends, strict=True):
                event = line.event
                assert event is not None
                stager.add(
                    "ledger_events",
                    event_row(line.position, line.source_file, line.line_number, event, APPLIED),
                )
                stager.add(
                    "ledger_requests",
                    (event.request_id, line.position, Event.fingerprint(event), APPLIED),
                )
                for seq, change in enumerate(end.changes):
                    stager.add("ledger_change_log", change_row(line.position, seq, change))
                    nets.setdefault((change.table, change.key), [change.before, None])[1] = (
                        change.after
                    )
                for seq, result in enumerate(end.results):
                    stager.add("ledger_results", result_row(line.position, seq, result))
            staged = StagedBatch(
                batch_id=batch_id,
                ledger=self.ledger.name,
                input_files=tuple(sorted(name for name, _ in files)),
                input_fingerprint=input_fingerprint(_infos(files)),
                ingested=len(lines),
                journal=(stager.commit(),),
                merkle_deltas=_merkle_deltas(nets),
                execute_seconds=0.0,
                fence_epoch=lease.epoch,
            )
            report = commit_staged(self.engine, self.ledger, staged)
        assert report.committed, f"batch {batch_id} was committed before"
        self.next_batch += 1
        return report


def _infos(files: Files) -> list[FileInfo]:
    """Each file as the pipeline describes it: name, non-blank lines, SHA-256."""
    return [
        FileInfo(name, sum(1 for _ in nonblank_lines(content)), hashlib.sha256(content).hexdigest())
        for name, content in files
    ]


def _merkle_deltas(nets: dict[tuple[str, object], list]) -> dict[tuple[str, int], int]:
    """The batch's Merkle bucket deltas from each row's net change (before, after)."""
    by_table: dict[str, list[tuple[object, object, object]]] = {}
    for (table, key), (before, after) in nets.items():
        by_table.setdefault(table, []).append((key, before, after))
    deltas: dict[tuple[str, int], int] = {}
    for table, changes in by_table.items():
        for bucket, delta in bucket_deltas(changes).items():
            deltas[(table, bucket)] = delta % MODULUS
    return deltas
