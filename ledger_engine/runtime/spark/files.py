"""Tasks over a batch's landed files: name them, and describe them (non-blank lines, SHA-256).

They live apart from `ledger_engine.pipeline.job` so that a Spark worker running them imports only
what they use (the pipeline's own imports cost a worker seconds on start-up).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pyarrow as pa

from ledger_engine.core.ingest import nonblank_lines
from ledger_engine.runtime.spark.streaming import file_name

NAMED_DDL = "name string, content binary"
DESCRIBED_DDL = "name string, lines bigint, sha256 string"


def named(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(path, content) -> (name, content): a file's name without its folder."""
    for batch in batches:
        names = [file_name(p) for p in batch.column("path").to_pylist()]
        yield pa.record_batch({"name": pa.array(names, pa.string()), "content": batch["content"]})


def described(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(name, content) -> (name, lines, sha256): non-blank lines and the content's hash."""
    for batch in batches:
        contents = batch.column("content").to_pylist()
        yield pa.record_batch(
            {
                "name": batch["name"],
                "lines": pa.array(
                    [sum(1 for _ in nonblank_lines(c or b"")) for c in contents], pa.int64()
                ),
                "sha256": pa.array([hashlib.sha256(c or b"").hexdigest() for c in contents]),
            }
        )
