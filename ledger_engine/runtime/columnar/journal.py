"""A batch's journal from the columnar engine's columns, encoded where the columns are.

The pipeline commits a batch's journal as CSV parts (`ledger_engine.store.staging`): each
part is encoded by the task that holds its columns, so the driver never touches an event.

- A slot's part (`slot_part`): its row changes (`ledger_change_log`) and results
  (`ledger_results`), each with the request id of the event at its position.
- A settling task's part (`settled_part`): the settled adds' changes.
- A unit's part (`lines_part`), once every outcome is known: each line's event
  (`ledger_events`), its request (`ledger_requests`), its rejection or duplicate. What the
  task needs besides the unit's lines is the batch's verdicts (`Verdicts`): the positions
  that were rejected (with reason and detail) or are duplicates (with their kind); every
  other position was applied.

Each part comes with the Merkle bucket deltas of the rows it changed (`row_digests`): a
row's delta from its first `before` to its last `after` in the part. A row's changes in a
round come from one slot and its settled adds from one task, and each part starts from the
value the previous one ended with, so the parts' deltas add up to the batch's net change
(the sum telescopes).
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ledger_engine.core.declarations import StreamingLedger, Table
from ledger_engine.core.records import APPLIED, DUPLICATE, REJECTED
from ledger_engine.runtime.columnar.admission import positions_of
from ledger_engine.runtime.columnar.screening import LINES_SCHEMA
from ledger_engine.runtime.columnar.typed import values_of
from ledger_engine.store.merkle import MODULUS, bucket_deltas, bucket_deltas_of_columns
from ledger_engine.store.staging import JournalPart, journal_csv, json_of, packed, readable

# A task's journal part as a parcel: per ledger table, its row count and CSV, packed as a
# `staging.JournalPart` holds it (so the driver unpacks nothing before the commit).
PART_SCHEMA = pa.schema(
    [
        ("table", pa.string()),
        ("rows", pa.int64()),
        ("size", pa.int64()),
        ("packed", pa.binary()),
    ]
)
# Merkle bucket deltas: per (table name, bucket), the delta modulo 2**256 as decimal text.
DIGESTS_SCHEMA = pa.schema([("table", pa.string()), ("bucket", pa.int32()), ("delta", pa.string())])

Digests = dict[tuple[str, int], int]  # (table name, bucket) -> delta


def part_table(csv: Mapping[str, tuple[int, bytes]]) -> pa.Table:
    """A part's CSV by table (table -> (rows, CSV)) as `PART_SCHEMA` rows."""
    packs = [packed(data) for _, data in csv.values()]
    return pa.table(
        {
            "table": list(csv),
            "rows": [rows for rows, _ in csv.values()],
            "size": [size for size, _ in packs],
            "packed": [data for _, data in packs],
        },
        schema=PART_SCHEMA,
    )


def journal_part(slot: str, table: pa.Table) -> JournalPart:
    """The `JournalPart` a `PART_SCHEMA` table holds, named `slot` (`stage:task`)."""
    names = table.column("table").to_pylist()
    sizes = table.column("size").to_pylist()
    packs = table.column("packed").to_pylist()
    return JournalPart(
        slot,
        {name: (size, data) for name, size, data in zip(names, sizes, packs, strict=True)},
        dict(zip(names, table.column("rows").to_pylist(), strict=True)),
    )


def digests_table(digests: Digests) -> pa.Table:
    """Merkle deltas as `DIGESTS_SCHEMA` rows."""
    return pa.table(
        {
            "table": [table for table, _ in digests],
            "bucket": [bucket for _, bucket in digests],
            "delta": [str(delta) for delta in digests.values()],
        },
        schema=DIGESTS_SCHEMA,
    )


def add_digests(into: Digests, table: pa.Table) -> None:
    """Add the deltas of a `DIGESTS_SCHEMA` table into `into`."""
    for name, bucket, delta in zip(
        table.column("table").to_pylist(),
        table.column("bucket").to_pylist(),
        table.column("delta").to_pylist(),
        strict=True,
    ):
        into[(name, bucket)] = (into.get((name, bucket), 0) + int(delta)) % MODULUS


def row_digests(table: Table, changes: pa.Table) -> Digests:
    """The Merkle bucket deltas of one table's changes (position, seq, key, before, after;
    keys and values typed as `columnar.typed` says): each row from its first change's
    `before` to its last change's `after`, netted by Arrow's ordered hash aggregation."""
    if not len(changes):
        return {}
    ordered = changes.sort_by([("position", "ascending"), ("seq", "ascending")])
    keep_nulls = pc.ScalarAggregateOptions(skip_nulls=False)  # null: the row was absent
    nets = ordered.group_by("key", use_threads=False).aggregate(
        [("before", "first", keep_nulls), ("after", "last", keep_nulls)]
    )
    keys, before, after = nets.column("key"), nets.column("before_first"), nets.column("after_last")
    if before.type == pa.binary():  # pickled values: their JSON is Python's to write
        rows = zip(keys.to_pylist(), values_of(before), values_of(after), strict=True)
        deltas = bucket_deltas(rows)
    else:
        deltas = bucket_deltas_of_columns(keys, before, after)
    return {(table.name, bucket): delta for bucket, delta in deltas.items() if delta}


def _request_ids(position: pa.Array, positions: np.ndarray, request_ids: pa.Array) -> pa.Array:
    """The request id at each of `position`, from the sorted `positions` and their ids."""
    at = np.searchsorted(positions, position.to_numpy(zero_copy_only=False))
    assert np.all(at < len(positions)) and np.array_equal(positions[at], position), (
        "every change and result belongs to an event of its slot"
    )
    return request_ids.take(pa.array(at))


def _texts(table: Table, column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """A value column as the journal's JSON text (`staging.json_of`; null: absent)."""
    if table.value_type is int:
        return pc.cast(column, pa.string())
    return pa.array([json_of(v) for v in values_of(column)], pa.string())


def slot_part(
    ledger: StreamingLedger,
    batch_id: int,
    changes: Mapping[int, pa.Table],
    results: pa.Table,
    positions: np.ndarray,
    request_ids: pa.Array,
) -> tuple[dict[str, tuple[int, bytes]], Digests]:
    """A slot's changes (by table index, `executing.changes_schema`) and results
    (`executing.RESULTS_SCHEMA`) as journal CSV, with their rows' Merkle deltas; `positions`
    (sorted) and `request_ids` are the slot's events'."""
    tables = list(ledger.tables.values())
    csv: dict[str, tuple[int, bytes]] = {}
    digests: Digests = {}
    parts: list[dict[str, pa.Array | pa.ChunkedArray]] = []
    for index, written in changes.items():
        if not len(written):
            continue
        table = tables[index]
        written = written.combine_chunks()
        position = written.column("position")
        parts.append(
            {
                "position": position,
                "seq": written.column("seq"),
                "request_id": _request_ids(position, positions, request_ids),
                "table_name": pa.array([table.name] * len(written), pa.string()),
                "key": pc.cast(written.column("key"), pa.string()),
                "before": _texts(table, written.column("before")),
                "after": _texts(table, written.column("after")),
            }
        )
        digests.update(row_digests(table, written))
    if parts:
        columns = {name: _joined([p[name] for p in parts]) for name in parts[0]}
        csv["ledger_change_log"] = (len(columns["seq"]), journal_csv(batch_id, columns))
    if len(results):
        results = results.combine_chunks()
        position = results.column("position")
        csv["ledger_results"] = (
            len(results),
            journal_csv(
                batch_id,
                {
                    "position": position,
                    "seq": results.column("seq"),
                    "stream": results.column("stream"),
                    "request_id": _request_ids(position, positions, request_ids),
                    "payload": pa.array(_result_texts(results), pa.string()),
                },
            ),
        )
    return csv, digests


def _joined(columns: list[pa.Array | pa.ChunkedArray]) -> pa.ChunkedArray:
    """Columns of one type as one (their chunks, not copied)."""
    chunks = [
        chunk
        for column in columns
        for chunk in (column.chunks if isinstance(column, pa.ChunkedArray) else [column])
    ]
    return pa.chunked_array(chunks, columns[0].type)


def _result_texts(results: pa.Table) -> list[str]:
    """Each result's payload as the journal stores it (`staging.result_row`): canonical JSON,
    JSON's `null` for None."""
    texts = results.column("payload").to_pylist()
    pickles = results.column("payload_pickle").to_pylist()
    stored = []
    for text, pickled in zip(texts, pickles, strict=True):
        payload = json.loads(text) if text is not None else pickle.loads(pickled)
        stored.append("null" if payload is None else json_of(payload))
    return stored


def settled_part(
    ledger: StreamingLedger, batch_id: int, settled: pa.Table
) -> tuple[dict[str, tuple[int, bytes]], Digests]:
    """Settled adds (`settling.SETTLED_SCHEMA`) as journal CSV, with their Merkle deltas."""
    if not len(settled):
        return {}, {}
    tables = list(ledger.tables.values())
    settled = settled.combine_chunks()
    index = settled.column("table").to_numpy()
    names = pa.array([t.name for t in tables], pa.string()).take(pa.array(index))
    columns = {
        "position": settled.column("position"),
        "seq": settled.column("seq"),
        "request_id": settled.column("request_id"),
        "table_name": names,
        "key": settled.column("key"),
        "before": pc.cast(settled.column("before"), pa.string()),
        "after": pc.cast(settled.column("after"), pa.string()),
    }
    digests: Digests = {}
    for i in np.unique(index).tolist():
        table = tables[i]
        mine = settled.filter(pa.array(index == i))
        key = mine.column("key")  # as text: an int key's digits
        changes = pa.table(
            {
                "position": mine.column("position"),
                "seq": mine.column("seq"),
                "key": key.cast(pa.int64()) if table.key_type is int else key,
                "before": mine.column("before"),
                "after": mine.column("after"),
            }
        )
        digests.update(row_digests(table, changes))
    return {"ledger_change_log": (len(settled), journal_csv(batch_id, columns))}, digests


@dataclass(frozen=True)
class Verdicts:
    """What a unit's lines need to know of the batch besides themselves: each unit's first
    position, and the rejected (reason, detail) and duplicate (kind) positions, sorted."""

    offsets: np.ndarray
    rejected: np.ndarray
    reasons: pa.Array
    details: pa.Array
    duplicates: np.ndarray
    kinds: pa.Array

    @classmethod
    def of(cls, offsets: np.ndarray, rejections: pa.Table, duplicates: pa.Table) -> Verdicts:
        """From a run's rejections and duplicates (`result.REJECTIONS_SCHEMA`,
        `admission.DUPLICATES_SCHEMA`)."""
        rejections = rejections.sort_by("position").combine_chunks()
        duplicates = duplicates.sort_by("position").combine_chunks()
        return cls(
            offsets,
            rejections.column("position").to_numpy(),
            rejections.column("reason").combine_chunks(),
            rejections.column("detail").combine_chunks(),
            duplicates.column("position").to_numpy(),
            duplicates.column("kind").combine_chunks(),
        )


def _found(sorted_positions: np.ndarray, position: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(whether each of `position` is in `sorted_positions`, where)."""
    at = np.searchsorted(sorted_positions, position)
    at = np.minimum(at, max(len(sorted_positions) - 1, 0))
    hit = sorted_positions[at] == position if len(sorted_positions) else np.zeros(len(at), bool)
    return hit, at


def _ended(lines: pa.Table, positions: pa.Array, mine: pa.Array) -> dict[str, pa.Array]:
    """The position, stream and request id of the lines at `mine`: how a rejection's and a
    duplicate's journal rows begin."""
    return {
        "position": positions.take(mine),
        "stream": lines.column("stream").take(mine),
        "request_id": lines.column("request_id").take(mine),
    }


def lines_part(batch_id: int, lines: pa.Table, verdicts: Verdicts) -> dict[str, tuple[int, bytes]]:
    """A unit's lines (`screening.LINES_SCHEMA`) as the journal's events, requests,
    rejections and duplicates."""
    assert lines.schema.equals(LINES_SCHEMA), lines.schema
    if not len(lines):
        return {}
    lines = lines.combine_chunks()
    position = positions_of(lines, verdicts.offsets)
    rejected, rejected_at = _found(verdicts.rejected, position)
    duplicate, duplicate_at = _found(verdicts.duplicates, position)
    assert not np.any(rejected & duplicate), "an event ends one way"
    outcome = np.full(len(position), APPLIED, dtype=object)
    outcome[rejected] = REJECTED
    outcome[duplicate] = DUPLICATE
    positions = pa.array(position, pa.int64())
    outcomes = pa.array(outcome, pa.string())
    csv = {
        "ledger_events": (
            len(lines),
            journal_csv(
                batch_id,
                {
                    "position": positions,
                    "source_file": lines.column("source_file"),
                    "line_number": lines.column("line_number"),
                    "stream": lines.column("stream"),
                    "request_id": lines.column("request_id"),
                    "payload": lines.column("payload"),
                    "outcome": outcomes,
                },
            ),
        )
    }
    asked = pa.array(~duplicate & pc.is_valid(lines.column("request_id")).to_numpy(False))
    if pc.any(asked).as_py():
        csv["ledger_requests"] = (
            pc.sum(asked).as_py(),
            journal_csv(
                batch_id,
                {
                    "request_id": lines.column("request_id").filter(asked),
                    "position": positions.filter(asked),
                    "fingerprint": lines.column("fingerprint").filter(asked),
                    "outcome": outcomes.filter(asked),
                },
            ),
        )
    if rejected.any():
        csv["ledger_rejections"] = _rejections_part(
            batch_id, lines, positions, verdicts, np.flatnonzero(rejected), rejected_at
        )
    if duplicate.any():
        rows = np.flatnonzero(duplicate)
        mine = pa.array(rows)
        csv["ledger_duplicates"] = (
            len(rows),
            journal_csv(
                batch_id,
                {
                    **_ended(lines, positions, mine),
                    "kind": verdicts.kinds.take(pa.array(duplicate_at[rows])),
                },
            ),
        )
    return csv


def _rejections_part(
    batch_id: int,
    lines: pa.Table,
    positions: pa.Array,
    verdicts: Verdicts,
    rows: np.ndarray,
    rejected_at: np.ndarray,
) -> tuple[int, bytes]:
    """The journal's rejections of a unit's rejected lines `rows`: each with its reason, its
    detail as stored and the raw bytes the line came as."""
    at = pa.array(rejected_at[rows])
    mine = pa.array(rows)
    return (
        len(rows),
        journal_csv(
            batch_id,
            {
                **_ended(lines, positions, mine),
                "reason": verdicts.reasons.take(at),
                "detail": pa.array(
                    [readable(d) for d in verdicts.details.take(at).to_pylist()], pa.string()
                ),
                "raw_input": pa.array(
                    [raw or b"" for raw in lines.column("raw").take(mine).to_pylist()],
                    pa.binary(),
                ),
            },
        ),
    )
