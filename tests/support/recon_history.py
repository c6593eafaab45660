"""Histories of a ledger and its statements, played step by step against the system of record,
and the outcome reconciliation must reach whatever the order of the steps: the tests of which
movements a run considers (`tests/reconcile/test_reconcile_scope.py`).

A `History` is a ledger's batches of deposits, statement files each about one account, and the
order of the steps: a batch committed, a file landed in the statement inbox, a reconciliation
run. Its accounts appear in statements at different times, one never does, and the source may
declare a start (`from`, a batch or a date). `play` runs the steps against a database and
ends with one more run; `oracle` reconciles the whole history at once with the reference
matcher, from the statements loaded and the ledger's change log, which the test reads itself
(`oracle_items`); `stored_outcome` is what the runs left (the matches of rules and the open
breaks), in the same shape.

The generated histories keep every candidate pair unambiguous: each movement has a reference
of its own, and at most one statement entry repeats it (exactly, near it within the second
rule's tolerance and window, or off by more than the tolerance), but for identical copies of
an entry (duplicates, in the same file or a later one); an entry of the statement alone has a
reference of its own or none and an amount of its own. A pair is then decided the
same way whenever both sides are known, which is what makes one reconciliation of the whole
history the outcome of every interleaving. (Where two candidates compete, a match a run has
recorded is final, and a better candidate arriving later does not undo it: the order of runs
can then decide which pair matches. These histories leave that out on purpose.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

from hypothesis import strategies as st
from sqlalchemy import Engine

from ledger_engine.reconcile.matching import LedgerItem, MatchingOutcome, StatementItem
from ledger_engine.reconcile.matching.reference import match
from ledger_engine.reconcile.rules import AmountCriterion, Rule
from ledger_engine.reconcile.run import Matcher, reconcile
from ledger_engine.reconcile.sources import Source, Sources
from ledger_engine.reconcile.statement_inbox import land_statement
from tests.support.bank import deposit
from tests.support.database import rows
from tests.support.events import event_file
from tests.support.reconcile import csv_source

DAY = date(2026, 11, 2)
ACCOUNTS = ("acct-a", "acct-b", "acct-c")
NEVER_STATED = "acct-z"  # moves in every batch, never in a statement: never reconciled
RULES = (
    Rule("exact", 0, amount=AmountCriterion(0), window_days=0, reference_similarity=1.0),
    Rule("near", 1, amount=AmountCriterion(50), window_days=3, reference_similarity=1.0),
)
COLUMNS = {"booking_date": "Date", "amount": "Amount", "reference": "Ref", "account": "Acct"}
COMMIT, LAND, RUN = "commit", "land", "run"


def keyed_source(**fields) -> Source:
    """The histories' source: CSV statements naming rows by the ledger's keys, by `RULES`;
    `fields` sets others (`from_batch`, `from_date`)."""
    return csv_source("bank", None, columns=COLUMNS, rules=RULES, **fields)


@dataclass(frozen=True)
class Movement:
    """A deposit of `amount` to `account`, value-dated `day`, with its own reference."""

    request_id: str
    account: str
    amount: int
    day: date
    reference: str


@dataclass(frozen=True)
class Entry:
    """A statement entry about `account`."""

    account: str
    amount: int
    day: date
    reference: str | None


@dataclass(frozen=True)
class History:
    """Batches of movements, statement files, the steps in order, and the source's start."""

    batches: tuple[tuple[Movement, ...], ...]
    files: tuple[tuple[Entry, ...], ...]  # in the order they land
    steps: tuple[str, ...]  # COMMIT the next batch, LAND the next file, RUN
    from_batch: int = 0
    from_date: date | None = None
    source: Source = field(init=False)

    def __post_init__(self) -> None:
        assert self.steps.count(COMMIT) == len(self.batches), self.steps
        assert self.steps.count(LAND) == len(self.files), self.steps
        source = keyed_source(from_batch=self.from_batch, from_date=self.from_date)
        object.__setattr__(self, "source", source)

    @property
    def movements(self) -> dict[str, Movement]:
        return {m.request_id: m for batch in self.batches for m in batch}


def csv_statement(entries: Sequence[Entry]) -> bytes:
    """`entries` as the source's CSV (amounts in units with two decimals)."""
    lines = ["Date,Amount,Ref,Acct"]
    for e in entries:
        sign = "-" if e.amount < 0 else ""
        amount = f"{sign}{abs(e.amount) // 100}.{abs(e.amount) % 100:02d}"
        lines.append(f"{e.day.isoformat()},{amount},{e.reference or ''},{e.account}")
    return ("\n".join(lines) + "\n").encode()


def play(
    history: History,
    engine: Engine,
    inbox: Path,
    commit: Callable[[Sequence[tuple[str, bytes]]], object],
    matcher: Matcher = match,
) -> None:
    """Run `history`'s steps against `engine`'s database (`commit` commits one batch's files),
    then one run more, so that everything landed is reconciled."""
    batches, files = iter(enumerate(history.batches)), iter(enumerate(history.files))
    sources = Sources({history.source.name: history.source}, digest="h" * 64)
    for step in (*history.steps, RUN):
        if step == COMMIT:
            number, movements = next(batches)
            events = [
                deposit(
                    m.request_id,
                    m.account,
                    m.amount,
                    reference=m.reference,
                    value_date=m.day.isoformat(),
                )
                for m in movements
            ]
            commit([(f"{number:04d}.jsonl", event_file(events))])
        elif step == LAND:
            number, entries = next(files)
            land_statement(inbox, history.source, f"{number:03d}.csv", csv_statement(entries))
        else:
            reconcile(engine, sources, inbox, matcher, who="pytest")


def oracle_items(engine: Engine, history: History) -> tuple[list[StatementItem], list[LedgerItem]]:
    """The whole history as one reconciliation sees it: every statement entry loaded, and
    every movement of each account a statement names, from the source's start (read here
    from the change log, apart from the store's scope)."""
    statement = [
        StatementItem((f, p), account, amount, day, reference, None)
        for f, p, account, amount, day, reference in rows(
            engine,
            "SELECT file_id, position, account, amount, coalesce(value_date, booking_date),"
            " reference FROM ledger_statement_entries WHERE source = :source",
            source=history.source.name,
        )
    ]
    named = {item.account for item in statement}
    movements = history.movements
    ledger = []
    for batch, position, seq, key, request_id, amount in rows(
        engine,
        "SELECT batch_id, position, seq, key, request_id,"
        " (after #>> '{}')::bigint - coalesce((before #>> '{}')::bigint, 0)"
        " FROM ledger_change_log WHERE table_name = 'accounts'",
    ):
        moved = movements[request_id]
        assert (moved.account, moved.amount) == (key, amount), request_id
        if key not in named or batch < history.from_batch:
            continue
        if history.from_date is not None and moved.day < history.from_date:
            continue
        ledger.append(
            LedgerItem(
                (batch, position, seq), key, amount, moved.day, moved.reference, None, request_id
            )
        )
    return statement, ledger


def oracle(engine: Engine, history: History) -> MatchingOutcome:
    """The reference matcher's outcome over the whole history at once."""
    statement, ledger = oracle_items(engine, history)
    return match(statement, ledger, RULES)


Decided = tuple[frozenset, frozenset]  # (matches, open breaks)


def outcome_decided(outcome: MatchingOutcome) -> Decided:
    """An outcome as sets: matches (rule, account, items, differences) and breaks (reason,
    account, items, amount difference)."""
    matches = frozenset(
        (
            m.rule,
            m.account,
            tuple(sorted(m.statement_ids)),
            tuple(sorted(m.ledger_ids)),
            m.amount_difference,
            m.date_difference_days,
        )
        for m in outcome.matches
    )
    breaks = frozenset(
        (b.reason, b.account, b.statement_ids, b.ledger_ids, b.amount_difference)
        for b in outcome.breaks
    )
    return matches, breaks


def stored_outcome(engine: Engine, source: str) -> Decided:
    """What the runs of `source` left: its rules' matches and its open breaks, as sets."""
    items: dict[int, tuple[list, list]] = {}
    for match_id, side, item in rows(
        engine,
        "SELECT match_id, 's', ARRAY[file_id, position] FROM ledger_recon_matched_entries"
        " UNION ALL SELECT match_id, 'l', ARRAY[batch_id, position, seq]"
        " FROM ledger_recon_matched_changes WHERE source = :source",
        source=source,
    ):
        items.setdefault(match_id, ([], []))[side == "l"].append(tuple(item))
    matches = frozenset(
        (rule, account, tuple(sorted(items[i][0])), tuple(sorted(items[i][1])), amount, days)
        for i, rule, account, amount, days in rows(
            engine,
            "SELECT match_id, rule, account, amount_difference, date_difference_days"
            " FROM ledger_recon_matches WHERE source = :source AND kind = 'rule'",
            source=source,
        )
    )
    open_breaks = rows(
        engine,
        "SELECT reason, account, file_id, position, batch_id, change_position, change_seq,"
        " amount_difference FROM ledger_recon_breaks WHERE source = :source AND status = 'open'",
        source=source,
    )
    breaks = frozenset(
        (
            reason,
            account,
            () if file_id is None else ((file_id, position),),
            () if batch is None else ((batch, change_position, seq),),
            difference,
        )
        for reason, account, file_id, position, batch, change_position, seq, difference in (
            open_breaks
        )
    )
    return matches, breaks


# --- generated histories ------------------------------------------------------------------

_FATES = ("stated", "near", "off", "unstated")


@st.composite
def _account_history(
    draw: st.DrawFn, account: str, batches: int
) -> tuple[list[tuple[int, Movement]], list[Entry]]:
    """An account's movements (each with its batch) and its statement entries."""
    movements: list[tuple[int, Movement]] = []
    entries: list[Entry] = []
    for n in range(draw(st.integers(0, 4))):
        moved = Movement(
            f"{account}-d{n}",
            account,
            draw(st.integers(100, 9_000)),
            DAY + timedelta(days=draw(st.integers(0, 3))),
            f"{account.upper()}-{n}",
        )
        movements.append((draw(st.integers(0, batches - 1)), moved))
        fate = draw(st.sampled_from(_FATES))
        if fate == "stated":
            entries.append(Entry(account, moved.amount, moved.day, moved.reference))
        elif fate == "near":
            near = moved.amount + draw(st.integers(-50, 50))
            day = moved.day + timedelta(days=draw(st.integers(0, 3)))
            entries.append(Entry(account, near, day, moved.reference))
        elif fate == "off":
            off = moved.amount + draw(st.sampled_from((-1, 1))) * draw(st.integers(51, 500))
            entries.append(Entry(account, off, moved.day, moved.reference))
    for n in range(draw(st.integers(0, 2))):  # the statement's alone; amounts of their own
        reference = draw(st.none() | st.just(f"{account.upper()}-X{n}"))
        day = DAY + timedelta(days=draw(st.integers(0, 3)))
        entries.append(Entry(account, 10_000 * (n + 1) + draw(st.integers(0, 99)), day, reference))
    # Entries sent again, identical: duplicates, whether or not a run comes between.
    copies = draw(st.lists(st.sampled_from(entries), max_size=2)) if entries else []
    return movements, draw(st.permutations(entries + copies))


@st.composite
def histories(draw: st.DrawFn, max_batches: int = 4, max_runs: int = 4) -> History:
    """A `History`: up to `max_batches` batches, each account's entries in one or two files
    landing in any order, up to `max_runs` runs anywhere among the steps, and a start."""
    count = draw(st.integers(1, max_batches))
    batches: list[list[Movement]] = [
        [Movement(f"z-{b}", NEVER_STATED, 1_000 + b, DAY, f"Z-{b}")] for b in range(count)
    ]
    files: list[tuple[Entry, ...]] = []
    for account in ACCOUNTS:
        movements, entries = draw(_account_history(account, count))
        for batch, moved in movements:
            batches[batch].append(moved)
        if entries:
            cut = draw(st.integers(1, len(entries)))
            files += [tuple(part) for part in (entries[:cut], entries[cut:]) if part]
    files = draw(st.permutations(files))
    steps = [COMMIT] * count + [LAND] * len(files) + [RUN] * draw(st.integers(0, max_runs))
    start = draw(st.sampled_from(("none", "batch", "date")))
    return History(
        batches=tuple(tuple(b) for b in batches),
        files=tuple(files),
        steps=tuple(draw(st.permutations(steps))),
        from_batch=draw(st.integers(0, count - 1)) if start == "batch" else 0,
        from_date=DAY + timedelta(days=draw(st.integers(0, 3))) if start == "date" else None,
    )
