"""Keeping reconciliation's decisions: what a run of a source considers, and all it decides,
in one transaction (tables: `sql/0019_reconciliation.sql`, `0020`, `0024`).

A run of a source considers what its specification's scope says
(`ledger_engine.reconcile.matching`): every item of the source not yet settled. Every item an
earlier run considered is matched or in an open break, so a run reads the statement entries of
files loaded since its last run, the ledger's movements of the accounts it reconciled before in
the batches committed since then, every movement since the source's start of an account
appearing now (its first statement entry, its declaration, a changed start), each read by its
key, and the items of its open breaks: it costs what is new, what appears and what is open,
not the ledger's history. `record_run` then writes the matches, resolves the open breaks whose
items are now matched, keeps the breaks that still hold, supersedes those whose reason
changed, settles the write-offs whose adjusting event it found committed
(`ledger_engine.reconcile.write_offs`), opens the new breaks, records the rules it matched by
and the accounts it read from the start (`ledger_recon_accounts`); before it commits it
counts, in the database, that every item considered is in exactly one match or one open break.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime

from psycopg2.extras import NamedTupleCursor, execute_values
from sqlalchemy import Engine

from ledger_engine.reconcile.break_states import MATCHED, OPENED, SUPERSEDED, WRITTEN_OFF
from ledger_engine.reconcile.matching import Break, LedgerItem, MatchingOutcome, StatementItem
from ledger_engine.reconcile.rules import Rule
from ledger_engine.reconcile.storage.sql_files import statement
from ledger_engine.reconcile.write_offs import PendingWriteOff, Settlement
from ledger_engine.store.locks import RECONCILE_LOCK

_PAGE = 1_000


@dataclass(frozen=True)
class Start:
    """Where a source's movements start (its declaration's `from`): batches from `batch` on,
    dated on or after `day` (None: any day). The default, batch 0 and any day, is all."""

    batch: int = 0
    day: date | None = None

    def __post_init__(self) -> None:
        assert self.batch >= 0, self.batch


@dataclass(frozen=True)
class LastRun:
    """The source's last recorded run: its id, where it stopped considering, and the start it
    read from (`None`: recorded before starts were, sql/0024)."""

    run_id: int | None  # None: the source has no run yet
    through_batch: int = -1
    through_file: int = 0
    start: Start | None = None


@dataclass(frozen=True)
class Scope:
    """What a run of `source` considers: the items, the horizon it reaches, and the accounts
    whose movements it read from the source's start (`appearing`)."""

    source: str
    table: str
    start: Start
    declared: tuple[str, ...] | None  # the rows it declares; None: named by its statements
    after_run: int | None  # the source's last run when the scope was read (None: none)
    after_batch: int
    through_batch: int
    after_file: int
    through_file: int
    appearing: tuple[str, ...]
    statement_items: tuple[StatementItem, ...]
    ledger_items: tuple[LedgerItem, ...]
    pending_write_offs: tuple[PendingWriteOff, ...] = ()
    # Entries considered that repeat an entry settled before (`repeated_entries.sql`).
    repeats: frozenset[tuple[int, ...]] = frozenset()


@dataclass(frozen=True)
class RunRecord:
    """What `record_run` wrote."""

    run_id: int
    matches: int
    opened_ids: tuple[int, ...]  # the breaks it opened
    closed_ids: tuple[int, ...]  # the breaks it closed, those its write-offs settled too
    written_off: int = 0

    @property
    def breaks_opened(self) -> int:
        return len(self.opened_ids)

    @property
    def breaks_closed(self) -> int:
        return len(self.closed_ids)


class ScopeMoved(RuntimeError):
    """Another run of the source recorded its decisions after this one read its scope."""


def read_scope(
    engine: Engine,
    source: str,
    table: str,
    fixed_accounts: Sequence[str] | None,
    start: Start = Start(),
) -> Scope:
    """The items a run of `source` (reconciling `table` from `start`) considers now; its
    ledger rows are `fixed_accounts`, or, where the source names rows by the ledger's own keys
    (`None`), the rows its statements have spoken of."""
    with engine.connect() as conn:
        return scope_in(conn.connection.cursor(), source, table, fixed_accounts, start)


def scope_in(
    cursor, source: str, table: str, fixed_accounts: Sequence[str] | None, start: Start
) -> Scope:
    """`read_scope` on a psycopg2 `cursor` (in its transaction)."""
    declared = None if fixed_accounts is None else tuple(sorted(set(fixed_accounts)))
    last = _last_run(cursor, source)
    cursor.execute(statement("runs/horizon"), (source,))
    through_batch, through_file = cursor.fetchone()
    # A changed start (or none recorded) reads every account again from the start.
    restart = last.start != start
    cursor.execute(
        statement("runs/appearing_accounts"),
        {
            "source": source,
            "table": table,
            "declared": None if declared is None else list(declared),
            "after_file": 0 if restart else last.through_file,
            "through_file": through_file,
            "restart": restart,
        },
    )
    appearing = tuple(account for (account,) in cursor.fetchall())
    cursor.execute(
        statement("runs/statement_items"),
        {"source": source, "after_file": last.through_file, "through_file": through_file},
    )
    statement_items = tuple(
        StatementItem((file_id, position), account, amount, day, reference, description)
        for file_id, position, account, amount, day, reference, description in cursor
    )
    ledger_items = _ledger_items(
        cursor,
        {
            "source": source,
            "table": table,
            "declared": None if declared is None else list(declared),
            "appearing": list(appearing),
            "after_batch": last.through_batch,
            "through_batch": through_batch,
            "from_batch": start.batch,
            "from_date": start.day,
        },
    )
    cursor.execute(statement("runs/pending_write_offs"), (source,))
    pending = tuple(_pending_write_off(*row) for row in cursor.fetchall())
    cursor.execute(
        statement("runs/repeated_entries"),
        {
            "files": [item.id[0] for item in statement_items],
            "positions": [item.id[1] for item in statement_items],
            "after_file": last.through_file,
        },
    )
    return Scope(
        source=source,
        table=table,
        start=start,
        declared=declared,
        after_run=last.run_id,
        after_batch=last.through_batch,
        through_batch=through_batch,
        after_file=last.through_file,
        through_file=through_file,
        appearing=appearing,
        statement_items=statement_items,
        ledger_items=ledger_items,
        pending_write_offs=pending,
        repeats=frozenset(cursor.fetchall()),
    )


def _ledger_items(cursor, scope: dict) -> tuple[LedgerItem, ...]:
    """The ledger's movements in `scope` (`ledger_items.sql`'s parameters)."""
    cursor.execute(statement("runs/ledger_items"), scope)
    return tuple(
        LedgerItem((batch, position, seq), key, amount, day, reference, description, request)
        for batch, position, seq, key, amount, day, reference, description, request in cursor
    )


def _pending_write_off(
    break_id, account, file_id, position, batch, change_position, seq, request_id, who, note
) -> PendingWriteOff:
    entries = () if file_id is None else ((file_id, position),)
    changes = () if batch is None else ((batch, change_position, seq),)
    return PendingWriteOff(break_id, account, entries, changes, request_id, who, note)


def list_open_breaks(engine: Engine) -> list[tuple]:
    """The open breaks, oldest first, from the readers' view `open_breaks` (named tuples:
    break_id, source, reason, account, statement_amount, ledger_amount, amount_difference,
    statement_reference, request_id, opened_at, write_off_request_id)."""
    with engine.connect() as conn:
        cursor = conn.connection.cursor(cursor_factory=NamedTupleCursor)
        cursor.execute(statement("runs/list_open_breaks"))
        return cursor.fetchall()


def described_breaks(engine: Engine, break_ids: Sequence[int]) -> list[tuple]:
    """The breaks `break_ids`, by id (named tuples: break_id, source, reason, account,
    statement_amount, ledger_amount, amount_difference, resolution), read by their primary
    key."""
    with engine.connect() as conn:
        cursor = conn.connection.cursor(cursor_factory=NamedTupleCursor)
        cursor.execute(statement("runs/described_breaks"), (list(break_ids),))
        return cursor.fetchall()


def first_rows(engine: Engine, table: str, count: int) -> list[str]:
    """The first `count` keys of the declared `table`, in key order."""
    with engine.connect() as conn:
        cursor = conn.connection.cursor()
        cursor.execute(statement("runs/first_rows"), (table, count))
        return [key for (key,) in cursor.fetchall()]


def balances_at_batch(engine: Engine, table: str, keys: Sequence[str], batch: int) -> dict:
    """Each of `keys`' balance in `table` as of `batch` (0 for a row not yet written)."""
    with engine.connect() as conn:
        cursor = conn.connection.cursor()
        cursor.execute(
            statement("runs/balances_at_batch"),
            {"table": table, "keys": list(keys), "batch": batch},
        )
        return dict(cursor.fetchall())


def _last_run(cursor, source: str) -> LastRun:
    cursor.execute(statement("runs/last_run"), (source,))
    found = cursor.fetchone()
    if found is None:
        return LastRun(None)
    run_id, through_batch, through_file, from_batch, from_date = found
    start = None if from_batch is None else Start(from_batch, from_date)
    return LastRun(run_id, through_batch, through_file, start)


def record_run(
    engine: Engine,
    scope: Scope,
    outcome: MatchingOutcome,
    *,
    rules: Sequence[Rule],
    settlements: Sequence[Settlement] = (),
    sources_digest: str,
    who: str,
    started_at: datetime,
) -> RunRecord:
    """Write `outcome`, decided by `rules` over `scope` less the items of the write-offs
    `settlements` settle, in one transaction (see the module); raises `ScopeMoved` if another
    run of the source recorded since `scope` was read."""
    with engine.begin() as conn:
        cursor = conn.connection.cursor()
        cursor.execute(statement("runs/lock"), (RECONCILE_LOCK, scope.source))
        if _last_run(cursor, scope.source).run_id != scope.after_run:
            raise ScopeMoved(f"another run of source {scope.source!r} recorded meanwhile")
        plan = _plan_breaks(cursor, scope.source, outcome, settlements)
        cursor.execute(
            statement("runs/insert_run"),
            (
                scope.source,
                sources_digest,
                scope.through_batch,
                scope.through_file,
                len(scope.statement_items),
                len(scope.ledger_items),
                len(outcome.matches),
                len(plan.opening),
                # Every break the run closes: those no longer holding and the write-offs it
                # settles (written off by a person, closed by this run).
                len(plan.closing) + len(settlements),
                who,
                started_at,
                scope.start.batch,
                scope.start.day,
            ),
        )
        run_id = cursor.fetchone()[0]
        _record_accounts(cursor, scope, run_id)
        _insert_rules(cursor, run_id, rules)
        match_of = _insert_matches(cursor, scope.source, run_id, outcome, who)
        opened = _apply_breaks(cursor, scope.source, run_id, plan, match_of, who)
        _settle_write_offs(cursor, scope.source, run_id, settlements)
        _check_settled(cursor, scope)
    closed = (*plan.closing.values(), *(s.write_off.break_id for s in settlements))
    assert len(opened) == len(plan.opening), "a new id for every break it opened"
    return RunRecord(run_id, len(outcome.matches), tuple(opened), closed, len(settlements))


def _record_accounts(cursor, scope: Scope, run_id: int) -> None:
    """The accounts the source reconciles now: those read from the start by this run, and
    none it no longer declares."""
    accounts = {
        "source": scope.source,
        "table": scope.table,
        "declared": None if scope.declared is None else list(scope.declared),
        "appearing": list(scope.appearing),
        "run_id": run_id,
    }
    cursor.execute(statement("runs/drop_accounts"), accounts)
    cursor.execute(statement("runs/record_accounts"), accounts)
    assert cursor.rowcount == len(scope.appearing), (cursor.rowcount, scope.appearing)


def _insert_rules(cursor, run_id: int, rules: Sequence[Rule]) -> None:
    rows = [
        (
            run_id,
            rule.priority,
            rule.name,
            rule.strategy,
            rule.amount.tolerance,
            rule.amount.relative,
            rule.window_days,
        )
        for rule in rules
    ]
    if rows:
        execute_values(cursor, statement("runs/insert_run_rules"), rows)


def insert_match(
    cursor,
    *,
    source: str,
    run_id: int | None,
    kind: str,
    rule: str | None,
    account: str,
    differences: tuple[int, int],
    who: str,
    note: str | None,
    items: tuple[Sequence[tuple[int, ...]], Sequence[tuple[int, ...]]],
) -> int:
    """Insert one match and its items (statement entries, ledger changes); its id."""
    amount_difference, date_difference_days = differences
    cursor.execute(
        statement("runs/insert_match"),
        (run_id, source, kind, rule, account, amount_difference, date_difference_days, who, note),
    )
    match_id = cursor.fetchone()[0]
    entries, changes = items
    if entries:
        execute_values(
            cursor,
            statement("runs/insert_matched_entries"),
            [(*item, match_id) for item in entries],
        )
    if changes:
        execute_values(
            cursor,
            statement("runs/insert_matched_changes"),
            [(source, *item, match_id) for item in changes],
        )
    return match_id


def _settle_write_offs(cursor, source: str, run_id: int, settlements: Sequence[Settlement]) -> None:
    """Each settled write-off: its match (the break's items and the adjustment), the break
    resolved as written off, in the break's history with the adjusting event's request id."""
    for settled in settlements:
        posted = settled.write_off
        match_id = insert_match(
            cursor,
            source=source,
            run_id=run_id,
            kind="write_off",
            rule=None,
            account=posted.account,
            differences=(settled.amount_difference, settled.date_difference_days),
            who=posted.who,
            note=posted.note,
            items=(posted.statement_ids, settled.ledger_ids),
        )
        resolve_break(cursor, posted.break_id, WRITTEN_OFF)
        append_history(
            cursor,
            posted.break_id,
            WRITTEN_OFF,
            posted.who,
            run_id,
            match_id,
            note=posted.note,
            request_id=posted.request_id,
        )


def _insert_matches(cursor, source: str, run_id: int, outcome: MatchingOutcome, who: str) -> dict:
    """Insert the matches; the match id of each item matched, by item."""
    match_of: dict[tuple[str, tuple[int, ...]], int] = {}
    entries, changes = [], []
    for match in outcome.matches:
        cursor.execute(
            statement("runs/insert_match"),
            (
                run_id,
                source,
                "rule",
                match.rule,
                match.account,
                match.amount_difference,
                match.date_difference_days,
                who,
                None,
            ),
        )
        match_id = cursor.fetchone()[0]
        for item in match.statement_ids:
            entries.append((*item, match_id))
            match_of[("statement", item)] = match_id
        for item in match.ledger_ids:
            changes.append((source, *item, match_id))
            match_of[("ledger", item)] = match_id
    if entries:
        execute_values(cursor, statement("runs/insert_matched_entries"), entries, page_size=_PAGE)
    if changes:
        execute_values(cursor, statement("runs/insert_matched_changes"), changes, page_size=_PAGE)
    return match_of


def _break_items(item: Break) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
    entry = item.statement_ids[0] if item.statement_ids else None
    change = item.ledger_ids[0] if item.ledger_ids else None
    return entry, change


BreakKey = tuple[str, tuple[int, ...] | None, tuple[int, ...] | None]  # reason, entry, change


@dataclass(frozen=True)
class _BreakPlan:
    """What a run does to the source's breaks: the open ones that no longer hold (by key, their
    id) are closed, the new ones opened; every other open break still holds, and ages."""

    closing: dict[BreakKey, int]
    opening: dict[BreakKey, Break]


def _plan_breaks(
    cursor, source: str, outcome: MatchingOutcome, settlements: Sequence[Settlement]
) -> _BreakPlan:
    """What becomes of the open breaks (those the settled write-offs close are left out: the
    settling closes them), and which breaks open."""
    settled = {s.write_off.break_id for s in settlements}
    cursor.execute(statement("runs/open_breaks"), (source,))
    open_now = {
        (reason, None if f is None else (f, p), None if b is None else (b, cp, cs)): break_id
        for break_id, reason, f, p, b, cp, cs in cursor.fetchall()
        if break_id not in settled
    }
    decided = {(b.reason, *_break_items(b)): b for b in outcome.breaks}
    return _BreakPlan(
        closing={key: i for key, i in open_now.items() if key not in decided},
        opening={key: b for key, b in decided.items() if key not in open_now},
    )


def _apply_breaks(
    cursor, source: str, run_id: int, plan: _BreakPlan, match_of: dict, who: str
) -> list[int]:
    """Resolve the breaks that no longer hold (matched, or superseded by a break of another
    reason) and open the new ones, each change in the break's history; the new ones' ids."""
    for (_, entry, change), break_id in plan.closing.items():
        matched = match_of.get(("statement", entry)) or match_of.get(("ledger", change))
        resolution = MATCHED if matched is not None else SUPERSEDED
        resolve_break(cursor, break_id, resolution)
        append_history(cursor, break_id, resolution, who, run_id, matched)
    opened: list[int] = []
    for (_, entry, change), item in plan.opening.items():
        cursor.execute(
            statement("runs/insert_break"),
            (
                source,
                item.reason,
                item.account,
                *(entry or (None, None)),
                *(change or (None, None, None)),
                item.amount_difference,
                run_id,
            ),
        )
        opened.append(cursor.fetchone()[0])
        append_history(cursor, opened[-1], OPENED, who, run_id, None)
    return opened


def resolve_break(cursor, break_id: int, resolution: str) -> None:
    """Resolve the open break `break_id` as `resolution` (it must have been open)."""
    cursor.execute(statement("runs/resolve_break"), (resolution, break_id))
    assert cursor.rowcount == 1, f"break {break_id} was open"


def append_history(
    cursor,
    break_id: int,
    action: str,
    who: str,
    run_id: int | None,
    match_id: int | None,
    *,
    note: str | None = None,
    request_id: str | None = None,
) -> None:
    """The next step of a break's history."""
    cursor.execute(
        statement("runs/insert_history"),
        {
            "break_id": break_id,
            "action": action,
            "who": who,
            "note": note,
            "run_id": run_id,
            "match_id": match_id,
            "request_id": request_id,
        },
    )


def _check_settled(cursor, scope: Scope) -> None:
    entries = [item.id for item in scope.statement_items]
    changes = [item.id for item in scope.ledger_items]
    cursor.execute(
        statement("runs/unsettled"),
        {
            "source": scope.source,
            "files": [f for f, _ in entries],
            "positions": [p for _, p in entries],
            "batches": [b for b, _, _ in changes],
            "change_positions": [p for _, p, _ in changes],
            "seqs": [s for _, _, s in changes],
        },
    )
    unsettled = cursor.fetchone()[0]
    if unsettled:
        raise AssertionError(
            f"reconciliation of {scope.source!r}: {unsettled} item(s) considered are not in "
            "exactly one match or open break; nothing was recorded"
        )
