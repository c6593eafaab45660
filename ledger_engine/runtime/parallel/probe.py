"""Whether a batch can be spread over parallel bins at all, judged from its first events.

Parallel execution has costs the serial runner does not: screening on Spark, shipping events,
rows and outcomes between processes. They pay only if the plan spreads the work over bins. A
batch that forms one conflict component (every transaction reads and writes one hot row, or
the batch is so dense over few rows that cutting it into rounds costs more than it saves) would
run in one bin: serial execution plus all of those costs. `run_spark`, whose events are in the
driver's memory anyway, therefore probes a batch first and runs the serial runner when the
probe shows that the batch cannot be spread.

The probe admits and plans the batch's first `PROBE_EVENTS` events in this process, with the
planner `run_spark` would use, and measures the *spread*: the probed transactions over the
plan's critical path (the largest bin of each round, summed). A spread of 1 means no two
transactions could run at once; with two bins it is at most 2. A prefix is a fair probe:
components only grow as transactions are added, so a prefix that is already one component
predicts a batch that is one too; the round cost is scaled by the prefix's share of the batch,
so that the prefix is cut into rounds as the whole batch would be. The probe always plans for
at least two bins: it asks whether the *batch* can be spread, not whether this session has
the cores to do it, so `local[1]` still runs on Spark what `local[2]` would.

The decision is one of speed only: both paths give the identical `RunResult`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ledger_engine.core.admission import admit_batch
from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.core.records import Event
from ledger_engine.runtime.parallel.in_process import batch_accesses, runnable_events
from ledger_engine.runtime.parallel.plan import plan

PROBE_EVENTS = 5_000
# Below this spread, parallel execution could at best overlap a tenth of the work: less than
# what shipping the batch through Spark costs.
MIN_SPREAD = 1.1


@dataclass(frozen=True)
class Prospect:
    """What the probe found: `probed` runnable transactions, and their `spread` (1.0 when
    nothing in the probe could run alongside anything else)."""

    probed: int
    spread: float

    @property
    def spreads(self) -> bool:
        """True when parallel execution can overlap enough of the batch to be worth it."""
        return self.spread >= MIN_SPREAD


def probe(
    ledger: StreamingLedger,
    batch: Sequence[Event],
    bins: int,
    round_cost: int,
    known_requests: Mapping[str, str],
) -> Prospect:
    """Plan the first `PROBE_EVENTS` events of `batch` as `run_spark` would plan the batch."""
    prefix = batch[:PROBE_EVENTS]
    runnables = runnable_events(prefix, admit_batch(ledger.streams, prefix, known_requests))
    if not runnables:  # nothing to learn from: let the parallel runner handle it
        return Prospect(0, float(max(bins, 2)))
    scaled_cost = round_cost * len(prefix) // max(len(batch), 1)
    schedule = plan(batch_accesses(ledger, runnables), max(bins, 2), scaled_cost)
    critical_path = schedule.estimated_cost
    assert 0 < critical_path <= len(runnables), (critical_path, len(runnables))
    return Prospect(len(runnables), len(runnables) / critical_path)
