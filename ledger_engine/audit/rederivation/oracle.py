"""The serial runner as an oracle: what the system of record must hold for the files it took in.

`serial_differences` reads which files each committed batch took (`ledger_batches`), reads
those files again, runs their lines one at a time with the serial runner in batch order, and
compares, line by line and row by row, everything the pipeline stored (`compare`): each
line's outcome and event row, rejections (reason, detail, raw bytes), duplicates, the change
log, results, every table's state and the batch rows' counts. It is how crash, soak and fuzz
tests prove that a run which died and ran again stored exactly what one uninterrupted run
would have. The replay (`replay.py`) makes the same comparisons from the stored event log.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Connection, Engine, text

from ledger_engine.audit.rederivation.compare import Rederivation
from ledger_engine.audit.rederivation.expected import file_line
from ledger_engine.audit.rederivation.stored_log import (
    MAX_POSITION,
    StoredLog,
    batch_rows,
    consistent_read,
)
from ledger_engine.audit.sql_files import audit_query
from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.core.ingest import ingest_files

MAX_LISTED = 5  # files listed per finding


def committed_inputs(conn: Connection) -> list[tuple[int, list[str]]]:
    """(batch id, input files) of every committed batch, in order."""
    rows = conn.execute(text(audit_query("oracle_committed_inputs")))
    return [(batch_id, list(files)) for batch_id, files in rows]


def serial_differences(
    engine: Engine, ledger: StreamingLedger, inbox: Path, *, complete: bool = True
) -> list[str]:
    """Every way the system of record differs from the serial runner over the files its
    batches took in; empty when it holds exactly what it must. With `complete`, every
    `*.jsonl` file in `inbox` must have been taken in by exactly one batch."""
    found: list[str] = []
    with consistent_read(engine) as conn:
        batches = committed_inputs(conn)
        names = [name for _, files in batches for name in files]
        doubled = sorted({n for n in names if names.count(n) > 1})
        if doubled:
            found.append(f"files taken in by more than one batch: {doubled[:MAX_LISTED]}")
        if complete:
            missing = sorted({p.name for p in inbox.glob("*.jsonl")} - set(names))
            if missing:
                found.append(f"{len(missing)} landed files in no batch: {missing[:MAX_LISTED]}")
        log = StoredLog(conn)
        rederivation = Rederivation(ledger, log)
        for index, (batch_id, files) in enumerate(batches):
            lines = ingest_files((name, (inbox / name).read_bytes()) for name in files)
            end = None if index == len(batches) - 1 else (batch_id, MAX_POSITION)
            rederivation.chunk(
                [file_line(batch_id, line) for line in lines], log.lines_through(end), end
            )
        tallies = rederivation.finish(conn, batch_rows(conn))
        log.close()
    for name, tally in tallies.items():
        found.extend(f"{name}: {finding}" for finding in tally.findings())
    return found
