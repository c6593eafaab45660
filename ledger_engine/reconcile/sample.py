"""A sample statement of a source: what its bank would report for a few of the ledger's
accounts, written from the ledger's own committed movements with differences injected
(`generator`), as a camt.053 file. `ledger demo` lands one for its first camt.053 source;
`ledger statements sample` writes or lands one for any, so that a person can try
reconciliation without a bank.

The movements are those the source's next reconciliation run considers (`read_scope`: new
since its last run, and those of its open breaks), the opening balances each account's as of
the batch before them, and the statement's dates the movements' own: it closes, and states
its closing balances, on the day of its last movement.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from sqlalchemy import Engine

from ledger_engine.errors import NoSampleStatement
from ledger_engine.reconcile.generated_statement import (
    ONE_OF_EACH,
    DifferencePlan,
    GeneratedStatement,
)
from ledger_engine.reconcile.generator import statement_with_differences
from ledger_engine.reconcile.run import ledger_rows_of, start_of
from ledger_engine.reconcile.sources import Source, Sources
from ledger_engine.reconcile.storage.runs import balances_at_batch, first_rows, read_scope

SAMPLE_ACCOUNTS = 5  # accounts of a sample, where the source does not name its own
SAMPLE_FORMAT = "camt053"  # the one format samples are written in


@dataclass(frozen=True)
class SampleStatement:
    """A sample statement of `source` and what it holds: its accounts, entries, the days it
    covers (the closing balances are as of `last_day`) and the differences injected."""

    source: str
    accounts: tuple[str, ...]
    generated: GeneratedStatement
    first_day: date
    last_day: date

    @property
    def document(self) -> bytes:
        return self.generated.document

    @property
    def entries(self) -> int:
        return len(self.generated.entries)

    @property
    def injected(self) -> dict[str, int]:
        return dict(self.generated.injected)


def first_camt053_source(sources: Sources) -> Source | None:
    """The source the demo writes its statement for: the first declared in camt.053."""
    return next((s for s in sources.sources.values() if s.format == SAMPLE_FORMAT), None)


def sample_statement(
    engine: Engine,
    source: Source,
    *,
    accounts: int = SAMPLE_ACCOUNTS,
    differences: DifferencePlan = ONE_OF_EACH,
    seed: int = 7,
    message_id: str,
) -> SampleStatement:
    """The sample statement of `source` (see the module) for its declared rows, or the first
    `accounts` rows of its table where it declares none, with `differences` injected; raises
    `NoSampleStatement` for a source not in camt.053, or with no movement to report."""
    if source.format != SAMPLE_FORMAT:
        raise NoSampleStatement(
            f"source {source.name!r} reads {source.format} files; sample statements are "
            f"written in camt.053 only"
        )
    keys = (ledger_rows_of(source) or first_rows(engine, source.table, accounts))[:accounts]
    scope = read_scope(engine, source.name, source.table, keys, start_of(source))
    if not scope.ledger_items:
        raise NoSampleStatement(
            f"no committed movement of {', '.join(keys) or 'any row'} in table "
            f"{source.table!r} is left for source {source.name!r} to reconcile: commit "
            "events first (ledger generate, ledger run)"
        )
    # Each account's statement opens where its movements in the scope start: after the
    # source's last run for an account it read before, at the start for one appearing now.
    appearing = [key for key in keys if key in scope.appearing]
    known = [key for key in keys if key not in scope.appearing]
    opening = balances_at_batch(engine, source.table, known, scope.after_batch)
    opening |= balances_at_batch(engine, source.table, appearing, scope.start.batch - 1)
    generated = statement_with_differences(
        scope.ledger_items,
        seed=seed,
        account_ids=_statement_accounts(source, keys),
        differences=differences,
        opening_balances=opening,
        currency=source.currency,
        precision=source.precision,
        message_id=message_id,
    )
    days = [b.opening_date for b in generated.balances] + [
        b.closing_date for b in generated.balances
    ]
    return SampleStatement(source.name, tuple(keys), generated, min(days), max(days))


def _statement_accounts(source: Source, keys: list[str]) -> dict[str, str]:
    """Each ledger key's account id in the statement: the id the source maps to it, or the
    key itself where the source names rows by the ledger's keys (or fixes one row)."""
    by_key = {key: account for account, key in sorted(source.accounts.items())}
    return {key: by_key.get(key, key) for key in keys}
