"""Where a row goes after its last use in a round: the carry of a plan with several rounds.

Rounds run one after another, and a round's tasks see only the rows they were given. A row
that a round writes (or only reads) and a later round uses must travel from the bin that used
it last to the bin that uses it next. Both are known from the plan: sort the accesses of the
ordered rows by (row, transaction); where two consecutive accesses to a row fall in different
rounds, the first one's task sends the row's value, as it stands at the task's end, to the
second one's slot. The row then goes on from there, round after round, like a baton.
A row only ever read (read-only) is read from the batch's source by each bin; a deferred
row is only added to and settled after the rounds.
"""

from __future__ import annotations

import numpy as np

from ledger_engine.runtime.parallel.plan import Accesses, Schedule

NO_CARRY = -1


def slots(schedule: Schedule) -> np.ndarray:
    """Each transaction's slot: round * bins + bin."""
    return schedule.round.astype(np.int64) * schedule.bins + schedule.bin


def carry_slots(accesses: Accesses, schedule: Schedule) -> np.ndarray:
    """Per access, the slot its row goes to after the access's task (`NO_CARRY` if none)."""
    carry = np.full(len(accesses.txn), NO_CARRY, dtype=np.int32)
    if schedule.rounds == 1 or len(accesses.txn) < 2:
        return carry
    by_row, starts = schedule.by_row, schedule.row_starts
    assert by_row is not None and starts is not None and schedule.ordered_by_row is not None
    txn = accesses.txn[by_row]
    slot = slots(schedule)[txn]
    rounds = schedule.round[txn]
    same_row = np.ones(len(by_row), dtype=bool)
    same_row[starts] = False  # the first access of a row's run follows none of its accesses
    handed = same_row[1:] & schedule.ordered_by_row[1:] & (rounds[:-1] != rounds[1:])
    carry[by_row[:-1][handed]] = slot[1:][handed]
    return carry
