"""Write-offs: a break closed by an adjusting event through the ledger itself, so that the
money trail stays in the engine and is audited like any other event.

A write-off has two steps. A person writes a break off (`ledger breaks write-off`,
`resolve.post_write_off`): the adjusting event is landed in the event inbox and the posting is
kept in the break's history, with the event's request id; the break stays open. When a later
reconciliation run of the source finds that event's change of the break's row among the
ledger's new movements, it *settles* the write-off: one match of kind `write_off` holds the
break's items and the adjustment, which together net to zero, and the break is resolved as
`written_off`. An adjusting event the ledger rejected (the row would go below its minimum, say)
changes nothing: the break stays open, and may be written off again under a new request id.

The adjustment is what makes the ledger agree with the statement:

| reason | adjustment |
| --- | --- |
| `missing_in_ledger` | + the statement amount |
| `missing_in_statement` | - the ledger amount (reversed) |
| `amount_mismatch` | + statement - ledger |
| `duplicate` | nothing: the statement listed an entry twice, the ledger is right |

A write-off of nothing (a duplicate, an entry of amount 0) needs no event: it resolves the
break at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ledger_engine.reconcile.matching import (
    AMOUNT_MISMATCH,
    DUPLICATE,
    MISSING_IN_LEDGER,
    MISSING_IN_STATEMENT,
    ItemId,
    LedgerItem,
    StatementItem,
)

REQUEST_PREFIX = "recon-write-off"


@dataclass(frozen=True)
class PendingWriteOff:
    """An open break whose write-off was posted: its items, and the adjusting event's request
    id, with who wrote it off and why."""

    break_id: int
    account: str
    statement_ids: tuple[ItemId, ...]
    ledger_ids: tuple[ItemId, ...]
    request_id: str
    who: str
    note: str


@dataclass(frozen=True)
class Settlement:
    """A posted write-off whose adjustment a run found committed: the match it makes."""

    write_off: PendingWriteOff
    adjustment_id: ItemId
    amount_difference: int  # statement total - ledger total, adjustment included: 0
    date_difference_days: int

    @property
    def ledger_ids(self) -> tuple[ItemId, ...]:
        return (*self.write_off.ledger_ids, self.adjustment_id)


def adjustment_amount(reason: str, statement_amount: int | None, ledger_amount: int | None) -> int:
    """The signed amount a write-off of a break of `reason` posts (see the module)."""
    if reason == MISSING_IN_LEDGER:
        assert statement_amount is not None and ledger_amount is None, reason
        return statement_amount
    if reason == MISSING_IN_STATEMENT:
        assert ledger_amount is not None and statement_amount is None, reason
        return -ledger_amount
    if reason == AMOUNT_MISMATCH:
        assert statement_amount is not None and ledger_amount is not None, reason
        return statement_amount - ledger_amount
    assert reason == DUPLICATE, reason
    return 0


def write_off_request_id(break_id: int, attempt: int) -> str:
    """The request id of the `attempt`-th (from 1) adjusting event posted for a break: unique
    per break and attempt, so that landing the same posting twice is a duplicate, and a new
    attempt after a rejected one is an event of its own."""
    assert break_id >= 0 and attempt >= 1, (break_id, attempt)
    return f"{REQUEST_PREFIX}-{break_id}-{attempt}"


def settle_write_offs(
    pending: Sequence[PendingWriteOff],
    statement_items: Sequence[StatementItem],
    ledger_items: Sequence[LedgerItem],
) -> tuple[tuple[Settlement, ...], tuple[StatementItem, ...], tuple[LedgerItem, ...]]:
    """The write-offs among `pending` whose adjustment is among `ledger_items` (a change of the
    break's own row by the posted request), settled; and the items left for matching."""
    statements = {item.id: item for item in statement_items}
    ledgers = {item.id: item for item in ledger_items}
    adjustments = {(item.request_id, item.account): item for item in ledger_items}
    settled: list[Settlement] = []
    for write_off in pending:
        adjustment = adjustments.get((write_off.request_id, write_off.account))
        if adjustment is None:
            continue  # not committed yet, or rejected: the break stays open
        own_statement = [statements[i] for i in write_off.statement_ids]
        own_ledger = [ledgers[i] for i in write_off.ledger_ids]
        assert len(own_statement) == len(write_off.statement_ids), write_off  # open: in scope
        assert len(own_ledger) == len(write_off.ledger_ids), write_off
        difference = sum(i.amount for i in own_statement) - sum(
            i.amount for i in (*own_ledger, adjustment)
        )
        days = (
            abs((own_statement[0].date - own_ledger[0].date).days)
            if own_statement and own_ledger
            else 0
        )
        settled.append(Settlement(write_off, adjustment.id, difference, days))
    used_statement = {i for s in settled for i in s.write_off.statement_ids}
    used_ledger = {i for s in settled for i in s.ledger_ids}
    assert len(used_ledger) == sum(len(s.ledger_ids) for s in settled), "an item settled twice"
    return (
        tuple(settled),
        tuple(i for i in statement_items if i.id not in used_statement),
        tuple(i for i in ledger_items if i.id not in used_ledger),
    )
