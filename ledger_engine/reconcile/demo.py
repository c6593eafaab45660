"""A day's statement for the demo: what the bank would report for a few of the ledger's
accounts, written from the ledger's own committed movements with one difference of each kind
injected (`generator`), landed in the source's inbox folder as a camt.053 file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine

from ledger_engine.reconcile.generator import DifferencePlan, statement_with_differences
from ledger_engine.reconcile.inbox import land_statement
from ledger_engine.reconcile.run import ledger_rows_of, start_of
from ledger_engine.reconcile.sources import Sources
from ledger_engine.store.reconciliation import balances_at_batch, first_rows, read_scope

DEMO_ACCOUNTS = 5


@dataclass(frozen=True)
class LandedStatement:
    """The statement the demo landed: where, for which accounts, with what injected."""

    path: Path
    source: str
    accounts: tuple[str, ...]
    entries: int
    injected: dict[str, int]


def land_demo_statement(
    engine: Engine, sources: Sources, inbox: Path, *, seed: int, tag: str
) -> LandedStatement | None:
    """Land a statement for the first camt.053 source (`None` if there is none, or its
    accounts have no movement to report)."""
    source = next((s for s in sources.sources.values() if s.format == "camt053"), None)
    if source is None:
        return None
    accounts = ledger_rows_of(source) or first_rows(engine, source.table, DEMO_ACCOUNTS)
    scope = read_scope(engine, source.name, source.table, accounts, start_of(source))
    if not scope.ledger_items:
        return None
    # Each account's statement opens where its movements in the scope start: after the
    # source's last run for an account it read before, at the start for one appearing now.
    appearing = [a for a in accounts if a in scope.appearing]
    known = [a for a in accounts if a not in scope.appearing]
    opening = balances_at_batch(engine, source.table, known, scope.after_batch)
    opening |= balances_at_batch(engine, source.table, appearing, scope.start.batch - 1)
    generated = statement_with_differences(
        scope.ledger_items,
        seed=seed,
        account_ids={account: account for account in accounts},
        differences=DifferencePlan(),
        opening_balances=opening,
        currency=source.currency,
        precision=source.precision,
        message_id=f"LEDGER-DEMO-{tag}",
    )
    path = land_statement(inbox, source, f"demo-{tag}.xml", generated.document)
    return LandedStatement(
        path, source.name, tuple(accounts), len(generated.entries), dict(generated.injected)
    )
