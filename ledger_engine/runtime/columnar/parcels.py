"""Parcels: Arrow tables that cross Spark whole, as one binary value each.

Spark's JVM handles a row at a time: moving a batch's events, rows and outcomes through it as
rows (Arrow to UnsafeRow and back, in every shuffle and cache) cost it about 58 CPU seconds per
10^6 transfers, three times what the serial runner spends on the whole batch. A parcel is an
Arrow IPC stream in one binary cell of a row that names what it holds (`PARCEL`): the JVM moves
and shuffles a few rows of megabytes, and the Python workers and the driver read the columns
without a conversion per event.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pyarrow as pa

# What a parcel holds (`kind`).
ADMISSION, EVENTS, ENDED, COUNT, ROUTED, ROWS, OUTCOMES, CHANGES, RESULTS, PENDING = range(10)
SETTLED, OVERFLOWED, FINGERPRINTS, PROFILE = range(10, 14)
# For the system of record (`columnar.journal`): a unit's lines, a task's journal part, the
# Merkle deltas of the rows a task changed.
LINES, JOURNAL, DIGESTS = range(14, 17)
# A batch's plan (`columnar.planning.PlannedBatch`), made by one task for the driver.
PLAN = 17

# A row of parcels: `slot` is the plan slot (round * bins + bin) a parcel goes to, or -1;
# `route` a value whose hash sends it to the task of its bin; `part` a kind-specific number
# (the table of a CHANGES parcel, the unit of a COUNT).
PARCEL = pa.schema(
    [
        ("kind", pa.int8()),
        ("slot", pa.int32()),
        ("route", pa.int64()),
        ("part", pa.int64()),
        ("blob", pa.binary()),
    ]
)
PARCEL_DDL = "kind tinyint, slot int, route bigint, part bigint, blob binary"

# A parcel's buffers are compressed: the JVM's cost of a parcel grows with its bytes (cached,
# shuffled, handed to and from the Python workers), and zstd at Arrow's default level packs
# the events, changes and results of 3x10^5 transfers to a fraction of their size for less
# CPU than the JVM spent moving the difference (JVM 9.7 -> 4.5 CPU s, workers unchanged).
_SEALING = pa.ipc.IpcWriteOptions(compression="zstd")
_PLAIN = pa.ipc.IpcWriteOptions()


def sealed(table: pa.Table | pa.RecordBatch, compressed: bool = True) -> bytes:
    """A table as the bytes of one Arrow IPC stream (its buffers compressed unless told not:
    a parcel that crosses Spark once, straight to the driver, is cheaper to move as it is)."""
    sink = pa.BufferOutputStream()
    options = _SEALING if compressed else _PLAIN
    with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
        writer.write(table)
    return sink.getvalue().to_pybytes()


def opened(blob: bytes | pa.Buffer) -> pa.Table:
    """The table a parcel holds."""
    return pa.ipc.open_stream(blob).read_all()


def parcel(
    kind: int, table: pa.Table | pa.RecordBatch, slot: int = -1, route: int = 0, part: int = 0
) -> pa.RecordBatch:
    """One row of `PARCEL` carrying `table`."""
    return parcels([(kind, slot, route, part, sealed(table))])


def parcels(rows: list[tuple[int, int, int, int, bytes]]) -> pa.RecordBatch:
    """Rows of `PARCEL` from (kind, slot, route, part, blob) tuples."""
    kinds, slots, routes, parts, blobs = zip(*rows, strict=True) if rows else ((),) * 5
    return pa.RecordBatch.from_arrays(
        [
            pa.array(kinds, pa.int8()),
            pa.array(slots, pa.int32()),
            pa.array(routes, pa.int64()),
            pa.array(parts, pa.int64()),
            pa.array(blobs, pa.binary()),
        ],
        schema=PARCEL,
    )


def unpacked(batches: Iterable[pa.RecordBatch]) -> Iterator[tuple[int, int, int, pa.Table]]:
    """(kind, slot, part, table) of every parcel in `batches`."""
    for batch in batches:
        kinds = batch.column("kind").to_pylist()
        slots = batch.column("slot").to_pylist()
        parts = batch.column("part").to_pylist()
        blobs = batch.column("blob")
        for i, kind in enumerate(kinds):
            yield kind, slots[i], parts[i], opened(blobs[i].as_buffer())


def in_first_order(tables: Iterable[pa.Table], column: str) -> list[pa.Table]:
    """The non-empty `tables` in order of their first value of `column`: for tables that each
    hold one unit's rows in order, units holding disjoint ranges, the order of all their rows
    without sorting the rows."""
    return sorted((t for t in tables if len(t)), key=lambda t: t.column(column)[0].as_py())


def concatenated(tables: list[pa.Table], schema: pa.Schema) -> pa.Table:
    """The rows of `tables` (of `schema`) as one table, a chunk per table (not copied into
    one: combining cost the driver 0.6 s per 10^6 transfers); an empty one when there are
    none."""
    if not tables:
        return schema.empty_table()
    return pa.concat_tables(tables)
