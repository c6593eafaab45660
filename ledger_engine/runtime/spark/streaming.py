"""The Structured Streaming job: landed event files -> micro-batches -> a batch handler.

Files (`*.jsonl`) are read whole with the `binaryFile` source, so that every line keeps its
file name, its line number and its exact bytes (a line that is not UTF-8 is rejected, not
lost). The batch stays a DataFrame: its files are split into lines inside Spark tasks.
`trigger(availableNow=True)` processes everything that has landed and stops; the checkpoint
folder remembers which files each batch id covered, and the commit's batch-id guard makes a
replayed batch a no-op.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlparse

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import (
    BinaryType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

BINARY_FILE_SCHEMA = StructType(
    [
        StructField("path", StringType(), False),
        StructField("modificationTime", TimestampType(), False),
        StructField("length", LongType(), False),
        StructField("content", BinaryType(), True),
    ]
)

BatchHandler = Callable[[int, DataFrame], None]


def file_name(spark_path: str) -> str:
    """`file:/abs/inbox/events-000001.jsonl` -> `events-000001.jsonl`."""
    return PurePosixPath(unquote(urlparse(spark_path).path)).name


def unfinished_batch(checkpoint: Path) -> int | None:
    """The batch the streaming query planned (its offsets logged) but never marked done (no
    entry in its commit log), which its next start runs again; None if there is none."""
    planned, done = logged_batches(checkpoint)
    return planned if planned is not None and planned != done else None


def logged_batches(checkpoint: Path) -> tuple[int | None, int | None]:
    """The last batch the streaming query planned and the last it marked done (None: none),
    read from the checkpoint's two logs, whose entries are files named by batch id."""
    planned, done = (_logged_batches(checkpoint / log) for log in ("offsets", "commits"))
    return max(planned, default=None), max(done, default=None)


def _logged_batches(log: Path) -> set[int]:
    if not log.is_dir():
        return set()
    return {int(entry.name) for entry in log.iterdir() if entry.name.isdigit()}


def run_available_batches(
    spark: SparkSession,
    inbox: Path,
    checkpoint: Path,
    files_per_batch: int,
    handle_batch: BatchHandler,
) -> None:
    """Run one micro-batch per `files_per_batch` landed files not yet processed, then stop.

    `handle_batch(batch_id, frame)` gets the batch's files as a DataFrame (path, content) and
    must commit the batch exactly once; an exception there fails the query and leaves the
    checkpoint before that batch.
    """
    inbox.mkdir(parents=True, exist_ok=True)
    source = (
        spark.readStream.format("binaryFile")
        .schema(BINARY_FILE_SCHEMA)
        .option("pathGlobFilter", "*.jsonl")
        .option("maxFilesPerTrigger", files_per_batch)
        .load(str(inbox))
    )

    def on_batch(frame: DataFrame, batch_id: int) -> None:
        handle_batch(batch_id, frame)

    query = (
        source.writeStream.foreachBatch(on_batch)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
