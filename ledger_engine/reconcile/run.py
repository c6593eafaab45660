"""A reconciliation run: statements loaded, each source's scope matched, the decisions kept.

`reconcile` loads the statement files that have landed (`inbox.load_statements`), then for
each declared source reads what it must consider (`reconcile.storage.runs.read_scope`: every
item not yet settled, as the specification in `matching` defines it: the new items, every
movement since the source's start of an account appearing now, and the items of its open
breaks), matches them by the source's rules and records the matches and breaks in one
transaction per source (`record_run`). A dry run matches and
reports the same, and writes nothing (not even the statements: it reads what is loaded).

The same inputs give the same decisions: matching is deterministic, and a run that dies
before its commit leaves the database as it was, so its rerun decides exactly the same.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import Engine

from ledger_engine.reconcile.matching import (
    DUPLICATE,
    MISSING_IN_LEDGER,
    Break,
    ItemId,
    LedgerItem,
    MatchingOutcome,
    StatementItem,
)
from ledger_engine.reconcile.matching.order import break_order
from ledger_engine.reconcile.rules import Rule
from ledger_engine.reconcile.sources import Source, Sources
from ledger_engine.reconcile.statement_inbox import load_statements
from ledger_engine.reconcile.storage.runs import RunRecord, Scope, Start, read_scope, record_run
from ledger_engine.reconcile.storage.statements import FileOutcome
from ledger_engine.reconcile.write_offs import Settlement, settle_write_offs

Matcher = Callable[[Sequence[StatementItem], Sequence[LedgerItem], Sequence[Rule]], MatchingOutcome]


@dataclass(frozen=True)
class SourceRun:
    """One source's part of a run: its scope, the decisions, and what was recorded (`None`
    for a dry run)."""

    source: str
    scope: Scope
    outcome: MatchingOutcome
    record: RunRecord | None
    settlements: tuple[Settlement, ...] = ()


@dataclass(frozen=True)
class ReconcileReport:
    """What a run did: the files it loaded and each source's part."""

    files: tuple[FileOutcome, ...]
    sources: tuple[SourceRun, ...]


def reconcile(
    engine: Engine,
    sources: Sources,
    statements_inbox: Path,
    matcher: Matcher,
    *,
    who: str,
    dry_run: bool = False,
) -> ReconcileReport:
    """Run reconciliation for every declared source (see the module)."""
    files = () if dry_run else tuple(load_statements(engine, sources, statements_inbox))
    runs = []
    for source in sorted(sources.sources.values(), key=lambda s: s.folder):
        started_at = datetime.now(UTC)
        scope = read_scope(
            engine, source.name, source.table, ledger_rows_of(source), start_of(source)
        )
        settlements, statement_items, ledger_items = settle_write_offs(
            scope.pending_write_offs, scope.statement_items, scope.ledger_items
        )
        outcome = _duplicates_kept(
            matcher(statement_items, ledger_items, source.rules), scope.repeats
        )
        _check_complete(scope, outcome, settlements)
        record = None
        if not dry_run:
            record = record_run(
                engine,
                scope,
                outcome,
                rules=source.rules,
                settlements=settlements,
                sources_digest=sources.digest,
                who=who,
                started_at=started_at,
            )
        runs.append(SourceRun(source.name, scope, outcome, record, settlements))
    return ReconcileReport(files, tuple(runs))


def ledger_rows_of(source: Source) -> list[str] | None:
    """The ledger rows `source` speaks of, where its declaration says; `None` where its
    statements name rows by the ledger's own keys."""
    if source.account is not None:
        return [source.account]
    if source.accounts:
        return sorted(set(source.accounts.values()))
    return None


def start_of(source: Source) -> Start:
    """Where `source`'s movements start, as its declaration's `from` says."""
    return Start(source.from_batch, source.from_date)


def _duplicates_kept(outcome: MatchingOutcome, repeats: frozenset[ItemId]) -> MatchingOutcome:
    """`outcome`, where an entry that repeats an entry settled before this run (`repeats`) and
    is still unmatched is a duplicate. The earlier identical entry was matched by an earlier run
    (or by hand), which is why this run does not consider it, and the matcher, seeing the entry
    alone, would call it missing in the ledger: so whether an entry sent again is a duplicate
    does not depend on whether a run came between the two statements."""
    if not repeats:
        return outcome
    breaks = [
        Break(DUPLICATE, b.account, b.statement_ids, ())
        if b.reason == MISSING_IN_LEDGER and b.statement_ids[0] in repeats
        else b
        for b in outcome.breaks
    ]
    return MatchingOutcome(outcome.matches, tuple(sorted(breaks, key=break_order)))


def _check_complete(
    scope: Scope, outcome: MatchingOutcome, settlements: Sequence[Settlement]
) -> None:
    """Every item considered ends in exactly one match, settled write-off or break (the
    matcher's side of the pair the store checks again before it commits)."""
    seen_statement = (
        [i for m in outcome.matches for i in m.statement_ids]
        + [i for b in outcome.breaks for i in b.statement_ids]
        + [i for s in settlements for i in s.write_off.statement_ids]
    )
    seen_ledger = (
        [i for m in outcome.matches for i in m.ledger_ids]
        + [i for b in outcome.breaks for i in b.ledger_ids]
        + [i for s in settlements for i in s.ledger_ids]
    )
    assert sorted(seen_statement) == sorted(i.id for i in scope.statement_items), scope.source
    assert sorted(seen_ledger) == sorted(i.id for i in scope.ledger_items), scope.source
