"""Admission on the driver, over columns: batch positions, duplicates, the runnable events.

Screening (`screening`) judged every event on its own where it lay. What is left needs the
whole batch: for each request id, the first event in batch order is the one that counts,
unless an earlier batch already executed the id (`known`); every other event with the id is a
duplicate, of the same payload (`exists`) if its fingerprint is the counted one's. All of it
is done with Arrow's hash kernels over the id column, never a Python loop over events.

Fingerprints (SHA-256 of stream and payload) are worked out only for the events a duplicate
is compared with, after the fact (`Admitted.compared`): hashing every event to find the few
duplicates would be most of screening's cost.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ledger_engine.core.records import EXISTS, EXISTS_WITH_DIFFERENT_PAYLOAD
from ledger_engine.runtime.columnar.screening import ADMISSION_SCHEMA, COUNTS_SCHEMA

# request ids (distinct) -> the (request_id, fingerprint) of those an earlier batch executed
KnownLookup = Callable[[pa.Array], pa.Table]
KNOWN_SCHEMA = pa.schema([("request_id", pa.string()), ("fingerprint", pa.string())])
FINGERPRINTS_SCHEMA = pa.schema([("position", pa.int64()), ("fingerprint", pa.string())])
DUPLICATES_SCHEMA = pa.schema(
    [
        ("position", pa.int64()),
        ("stream", pa.string()),
        ("request_id", pa.string()),
        ("kind", pa.string()),
    ]
)


def known_in_memory(known: Mapping[str, str]) -> KnownLookup | None:
    """A `KnownLookup` over a mapping of request ids to fingerprints (None if it is empty)."""
    if not known:
        return None
    table = pa.table(
        {"request_id": list(known), "fingerprint": list(known.values())}, schema=KNOWN_SCHEMA
    )

    def lookup(ids: pa.Array) -> pa.Table:
        return table.filter(pc.is_in(table.column("request_id"), value_set=ids))

    return lookup


def unit_offsets(counts: pa.Table, units: int) -> np.ndarray:
    """Each unit's first batch position, and the batch's size at the end (`units` + 1
    entries); every unit must have reported its count once."""
    assert counts.schema.equals(COUNTS_SCHEMA), counts.schema
    unit = counts.column("unit").to_numpy()
    assert len(unit) == units and len(np.unique(unit)) == units, "one count per unit"
    sizes = np.zeros(units, dtype=np.int64)
    sizes[unit] = counts.column("events").to_numpy()
    offsets = np.zeros(units + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return offsets


def positions_of(table: pa.Table, offsets: np.ndarray) -> np.ndarray:
    """The batch positions of a table's (unit, index) rows."""
    return offsets[table.column("unit").to_numpy()] + table.column("index").to_numpy()


@dataclass(frozen=True)
class Admitted:
    """The verdict of admission: the events that run and the duplicates.

    `runnable` holds (position, request_id, acc_row, acc_flags) in batch order. `duplicates` holds
    (position, stream, request_id) and what each is compared with: `first`, the position of
    the counted event of its id in this batch (-1 when an earlier batch executed the id), or
    `known_fingerprint`.
    """

    runnable: pa.Table
    duplicates: pa.Table

    @property
    def compared(self) -> np.ndarray:
        """The positions whose fingerprints decide the duplicates' kinds (sorted)."""
        dup = self.duplicates
        first = dup.column("first").to_numpy()
        both = np.concatenate([dup.column("position").to_numpy(), first[first >= 0]])
        return np.unique(both)

    def duplicate_verdicts(self, fingerprints: pa.Table) -> pa.Table:
        """The duplicates with their kind (`DUPLICATES_SCHEMA`), given the fingerprints of
        the `compared` positions."""
        dup = self.duplicates
        if not len(dup):
            return DUPLICATES_SCHEMA.empty_table()
        found = fingerprints.column("position")
        own = fingerprints.column("fingerprint").take(
            pc.index_in(dup.column("position"), value_set=found)
        )
        first = fingerprints.column("fingerprint").take(
            pc.index_in(dup.column("first"), value_set=found)
        )
        against = pc.coalesce(dup.column("known_fingerprint"), first)
        same = pc.fill_null(pc.equal(own, against), False)
        kind = pc.if_else(same, EXISTS, EXISTS_WITH_DIFFERENT_PAYLOAD)
        return pa.table(
            {
                "position": dup.column("position"),
                "stream": dup.column("stream"),
                "request_id": dup.column("request_id"),
                "kind": kind,
            },
            schema=DUPLICATES_SCHEMA,
        )


def admit_columns(admission: pa.Table, offsets: np.ndarray, known: KnownLookup | None) -> Admitted:
    """Admission of a batch from its screened events' admission columns
    (`screening.ADMISSION_SCHEMA`: every event with a valid request id), in batch order;
    `known` None: no earlier batch executed any request id."""
    assert admission.schema.equals(ADMISSION_SCHEMA), admission.schema
    position = positions_of(admission, offsets)
    assert np.all(position[1:] > position[:-1]), "admission rows in batch order, once each"
    admission = admission.append_column("position", pa.array(position, pa.int64()))
    ids = admission.column("request_id")
    first = _first_of_id(admission, position)
    earlier = KNOWN_SCHEMA.empty_table() if known is None else known(pc.unique(ids))
    known_fingerprint = (
        earlier.column("fingerprint").take(pc.index_in(ids, value_set=earlier.column("request_id")))
        if len(earlier)
        else pa.nulls(len(ids), pa.string())
    )
    was_known = pc.is_valid(known_fingerprint).to_numpy(zero_copy_only=False)
    duplicate = (position != first) | was_known
    runs = admission.column("runs").to_numpy(zero_copy_only=False) & ~duplicate
    runnable = admission.select(["position", "request_id", "acc_row", "acc_flags"])
    if not runs.all():  # filtering copies every column, the list columns of row ids included
        runnable = runnable.filter(pa.array(runs))
    dup_rows = pa.array(np.flatnonzero(duplicate))
    duplicates = pa.table(
        {
            "position": admission.column("position").take(dup_rows),
            "stream": admission.column("stream").take(dup_rows),
            "request_id": ids.take(dup_rows),
            "first": pa.array(np.where(was_known, -1, first)[duplicate], pa.int64()),
            "known_fingerprint": known_fingerprint.take(dup_rows),
        }
    )
    return Admitted(runnable, duplicates)


def _first_of_id(admission: pa.Table, position: np.ndarray) -> np.ndarray:
    """For each row, the first position in the batch with its request id.

    Sorted by the ids' 64-bit hashes: a row whose hash no other row shares is its id's first
    (the common case, decided with one sort of integers); the rows whose hashes repeat are
    grouped again by their text, so a hash collision never makes a duplicate."""
    first = position.copy()
    hashes = admission.column("rid_hash").to_numpy()
    ordered = np.sort(hashes)
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    if not len(repeated):
        return first
    rows = np.flatnonzero(np.isin(hashes, repeated))
    candidates = pa.table(
        {
            "request_id": admission.column("request_id").take(pa.array(rows)),
            "position": position[rows],
        }
    )
    groups = candidates.group_by("request_id").aggregate([("position", "min")])
    group = pc.index_in(candidates.column("request_id"), value_set=groups.column("request_id"))
    first[rows] = groups.column("position_min").take(group).to_numpy()
    return first
