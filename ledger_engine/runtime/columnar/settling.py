"""Settling deferred adds, over columns: each deferred row's adds in batch order.

A deferred row was only added to during the batch (`ledger_engine.runtime.parallel.plan`), so
each transaction recorded the sum of its deltas and the lowest and highest running total of
them (`executing.PENDING_SCHEMA`). Settling sorts a row's adds by position and gives each its
before and after values from the row's value before the batch: a running sum, computed with
NumPy when no total can come near the int64 bounds, and with the exact per-add walk of
`ledger_engine.runtime.parallel.settle.settle_row` otherwise. A row whose running total leaves
int64 is reported (`OVERFLOWED_SCHEMA`): deferring it was a wrong guess, and the batch is
planned again with the row ordered.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.core.transaction import PendingAdd
from ledger_engine.runtime.columnar.executing import PENDING_SCHEMA, RowSource
from ledger_engine.runtime.parallel.settle import PROBE, Overflow, Pending, settle_row

SETTLED_SCHEMA = pa.schema(
    [
        ("table", pa.int16()),
        ("key", pa.string()),
        ("position", pa.int64()),
        ("seq", pa.int32()),
        ("request_id", pa.string()),
        ("before", pa.int64()),  # null: the row was absent
        ("after", pa.int64()),
    ]
)
OVERFLOWED_SCHEMA = pa.schema([("table", pa.int16()), ("key", pa.string())])
SAFE = float(2**62)  # below this, no sum of two in-range totals leaves int64


def settle_pending(
    ledger: StreamingLedger, pending: pa.Table, source: RowSource
) -> tuple[pa.Table, pa.Table]:
    """The settled changes of `pending` (every add of each row it holds), and the rows whose
    running total overflowed (their adds are left out)."""
    assert pending.schema.equals(PENDING_SCHEMA), pending.schema
    if not len(pending):
        return SETTLED_SCHEMA.empty_table(), OVERFLOWED_SCHEMA.empty_table()
    pending = pending.sort_by(
        [("table", "ascending"), ("key", "ascending"), ("position", "ascending")]
    )
    table = pending.column("table").to_numpy()
    keys = pending.column("key").to_pylist()
    starts = _segment_starts(table, keys)
    bases = _bases(ledger, table, keys, starts, source)
    if pending.column("wide").null_count == len(pending) and _far_from_bounds(pending, bases):
        return _settled_fast(pending, starts, bases)
    return _settled_exact(ledger, pending, starts, bases)


def _segment_starts(table: np.ndarray, keys: list[str]) -> np.ndarray:
    """Where each row's run of adds starts (sorted input)."""
    change = np.ones(len(keys), dtype=bool)
    change[1:] = (table[1:] != table[:-1]) | np.array(
        [a != b for a, b in zip(keys[1:], keys[:-1], strict=True)], dtype=bool
    )
    return np.flatnonzero(change)


def _bases(
    ledger: StreamingLedger,
    table: np.ndarray,
    keys: list[str],
    starts: np.ndarray,
    source: RowSource,
) -> list[Any]:
    """Each row's value before the batch (`None`: absent)."""
    tables = list(ledger.tables.values())
    wanted: dict[int, list[Any]] = {}
    for start in starts:
        declared = tables[table[start]]
        wanted.setdefault(int(table[start]), []).append(_key(declared, keys[start]))
    found = {index: source.read(0, tables[index], rows) for index, rows in wanted.items()}
    return [found[int(table[s])].get(_key(tables[table[s]], keys[s])) for s in starts]


def _key(table: Any, text: str) -> Any:
    return int(text) if table.key_type is int else text


def _far_from_bounds(pending: pa.Table, bases: list[Any]) -> bool:
    """Whether no running total can come near int64's bounds (so int64 sums are exact).
    Summed in floating point: an int64 sum of the deltas could itself wrap around."""
    base = max((abs(float(b)) for b in bases if b is not None), default=0.0)
    magnitudes = [
        np.abs(pending.column(name).to_numpy().astype(np.float64))
        for name in ("delta", "low", "high")
    ]
    total = float(magnitudes[0].sum())
    extreme = float(max(magnitudes[1].max(initial=0.0), magnitudes[2].max(initial=0.0)))
    return base + total + extreme < SAFE


def _settled_fast(
    pending: pa.Table, starts: np.ndarray, bases: list[Any]
) -> tuple[pa.Table, pa.Table]:
    count = len(pending)
    delta = pending.column("delta").to_numpy()
    seq = pending.column("seq").to_numpy()
    segment = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, count]))
    base = np.array([0 if b is None else b for b in bases], dtype=np.int64)
    absent = np.array([b is None for b in bases], dtype=bool)
    running = np.cumsum(delta)
    before_segment = np.r_[0, running][starts]  # the running sum where each segment starts
    after = base[segment] + running - before_segment[segment]
    before = after - delta
    real = seq != PROBE
    # A change's before is null while the row is still absent: no real add before it in its
    # segment and no value before the batch.
    earlier_real = np.cumsum(real) - real
    earlier_in_segment = earlier_real - earlier_real[starts][segment]
    null_before = absent[segment] & (earlier_in_segment == 0)
    kept = pa.array(np.flatnonzero(real))
    settled = pa.table(
        {
            "table": pending.column("table"),
            "key": pending.column("key"),
            "position": pending.column("position"),
            "seq": pending.column("seq"),
            "request_id": pending.column("request_id"),
            "before": pa.array(before, pa.int64(), mask=null_before),
            "after": pa.array(after, pa.int64()),
        },
        schema=SETTLED_SCHEMA,
    ).take(kept)
    return settled, OVERFLOWED_SCHEMA.empty_table()


def _settled_exact(
    ledger: StreamingLedger, pending: pa.Table, starts: np.ndarray, bases: list[Any]
) -> tuple[pa.Table, pa.Table]:
    tables = list(ledger.tables.values())
    rows = pending.to_pylist()
    settled: dict[str, list] = {name: [] for name in SETTLED_SCHEMA.names}
    overflowed: dict[str, list] = {name: [] for name in OVERFLOWED_SCHEMA.names}
    for n, (lo, hi) in enumerate(zip(starts, np.r_[starts[1:], len(rows)], strict=True)):
        first = rows[lo]
        declared = tables[first["table"]]
        key = _key(declared, first["key"])
        items = [_pending_of(declared.name, key, row) for row in rows[lo:hi]]
        try:
            changes = list(settle_row(bases[n], items))
        except Overflow:
            overflowed["table"].append(first["table"])
            overflowed["key"].append(first["key"])
            continue
        for item in changes:
            settled["table"].append(first["table"])
            settled["key"].append(first["key"])
            settled["position"].append(item.position)
            settled["seq"].append(item.seq)
            settled["request_id"].append(item.change.request_id)
            settled["before"].append(item.change.before)
            settled["after"].append(item.change.after)
    return (
        pa.table(settled, schema=SETTLED_SCHEMA),
        pa.table(overflowed, schema=OVERFLOWED_SCHEMA),
    )


def _pending_of(table: str, key: Any, row: dict[str, Any]) -> Pending:
    if row["wide"] is None:
        delta, low, high = row["delta"], row["low"], row["high"]
    else:
        delta, low, high = (int(n) for n in row["wide"].split(","))
    add = PendingAdd(row["request_id"], table, key, delta, low, high)
    return Pending(row["position"], row["seq"], add)
