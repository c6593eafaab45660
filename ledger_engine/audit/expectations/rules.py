"""Every rule of the Great Expectations audit, declared once for both suites.

Each rule (`RULES`, in report order) states itself twice: over the whole ledger, for the full
audit's suite `ledger_integrity`, and over the batches after the last passing audit, for the
batch audit's suite `ledger_batch_integrity` (or not at all, where it is the full audit's
alone); each form has its check name, what holds and its SQL (`queries`). A rule about a
declared table or invariant gives a check per table or invariant, its words filled in from the
declaration. `checks(ledger, scope)` expands the list for one suite; `suites` turns the checks
into Great Expectations' expectations. `expectations/README.md` lists the rules, what each
holds and what its findings name.

What lies before the batch scope was proven by earlier audits; the scope's rules prove that it
continues from there: a key's first change in scope starts from the `after` of its change
before the scope, the first batch row in scope names the hash of the batch before it, and
each key written in scope holds what its last change says. A row changed behind the engine's
back outside the scope (a key no batch in scope wrote) is the full audit's to find. Each rule
in scope reads `{batch}` once, into a materialized CTE `scope`, and bounds every log table by
`(SELECT scope.first_batch FROM scope)` and `(SELECT scope.last_batch FROM scope)`: values
PostgreSQL knows before it scans, so it scans only the primary key's range (read by a bitmap
scan under the settings of `ledger_engine.audit.session`). Lookups outside the scope (a key's
earlier change, a request id's other events, a state row) are LATERAL subqueries with LIMIT or
OFFSET 0, so that the planner cannot turn them into a join over a whole table. So a suite in
scope costs the same on a ledger of a thousand events or of millions.

The whole-ledger rules run on ledgers of millions of rows, so each is set-based: a few joins
along the tables' index orders and GROUP BYs, no subquery per row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ledger_engine.audit.expectations import queries as q
from ledger_engine.audit.sql_files import BATCHES, LEDGER, SCOPES
from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.core.invariants import Invariant
from ledger_engine.errors import DeclarationError

SUITE = "great_expectations"  # `CheckResult.suite` of the rules, unless a rule says otherwise
RECONCILIATION = "reconciliation"  # `CheckResult.suite` of the reconciliation's rules
_SUITE_WORDS = {LEDGER: "whole-ledger", BATCHES: "batch"}
SCOPE_WORDS = "the batches after the last passing audit (the view ledger_audit_scope)"

# What one check of a rule is about: the ledger, each declared table, each declared invariant.
ONCE, EACH_TABLE, EACH_INVARIANT = "once", "each table", "each invariant"


@dataclass(frozen=True)
class RowsQuery:
    """The query of a check's offending rows: the rows `query` returns, or, for a query
    several rules share, its rows (`rule`, `finding`) of `rule`."""

    query: str
    rule: str | None = None


# A rule's offending rows for one subject (a `Table`, an `Invariant` or None) of a ledger.
RowsOf = Callable[[StreamingLedger, Any], RowsQuery]


@dataclass(frozen=True)
class Form:
    """A rule as one suite states it: its check name and what holds, as templates of the
    subject's words (`{table}`; `{invariant}` and `{describe}`; `{scope}` for the batch
    scope's words), and the query of its offending rows."""

    name: str
    holds: str
    rows: RowsOf


@dataclass(frozen=True)
class Rule:
    """One rule of the audit: over the whole ledger and in scope (None: the full audit's
    alone). `whole_once`: the whole-ledger form runs its query once (`rows_once`) rather than
    with Great Expectations' own expectation, which runs it twice (a form in scope always runs
    it once)."""

    over: str  # ONCE, EACH_TABLE or EACH_INVARIANT
    whole: Form
    in_scope: Form | None
    suite: str = SUITE
    whole_once: bool = False


@dataclass(frozen=True)
class Check:
    """A rule as one suite of one ledger checks it."""

    name: str
    holds: str
    rows: RowsQuery
    once: bool  # run the query once (`rows_once`)
    suite: str  # its `CheckResult.suite`


def _rows(query: Callable[[], str]) -> RowsOf:
    return lambda _ledger, _subject: RowsQuery(query())


def _of_table(query: Callable[[Any], str], rule: str | None = None) -> RowsOf:
    return lambda _ledger, table: RowsQuery(query(table), rule)


def _invariant_in_scope(ledger: StreamingLedger, invariant: Invariant) -> RowsQuery:
    table = ledger.tables[invariant.table]
    return RowsQuery(q.invariant_in_scope_query(invariant, table), q.invariant_rule(invariant))


def _reconciliation(name: str, check: str, holds: str) -> Rule:
    """A reconciliation rule: over the tables of sql/0019_reconciliation.sql and
    0020_recon_resolutions.sql, written apart from `ledger_engine.reconcile.storage.runs`
    (which checks its own run before it commits): what every run left must hold together,
    whichever run left it. The full audit's alone: a pipeline run writes none of their tables,
    a reconciliation run checks what it decides before it commits, and "the runs since the
    last audit" are not data an index could bound (the marks record batches, not runs), while
    a run changes breaks that earlier runs opened. They hold on a ledger never reconciled."""
    rows = _rows(lambda: q.reconciliation_query(name))
    return Rule(ONCE, Form(check, holds, rows), None, RECONCILIATION, whole_once=True)


RULES: tuple[Rule, ...] = (
    Rule(
        EACH_TABLE,
        Form(
            "{table} equals the fold of its change log",
            "`{table}` equals the fold of its change log: each row holds the `after` of its "
            "key's last change-log entry and names that entry as its last, every key whose "
            "last entry is not a deletion has a row, and no row lacks change-log entries.",
            _of_table(q.fold_query),
        ),
        Form(
            "{table} keys written in scope hold their last change",
            "Each key of `{table}` written in {scope} holds the `after` of its last "
            "change-log entry, or has no row if that is NULL.",
            _of_table(q.written_keys_query, q.FOLD),
        ),
    ),
    Rule(
        EACH_TABLE,
        Form(
            "{table} change log is an unbroken chain",
            "For each key of `{table}`, every change-log entry's `before` is the `after` of "
            "the entry before it, and the first starts from nothing.",
            _of_table(q.change_chain_query),
        ),
        Form(
            "{table} change log in scope continues its chain",
            "Each change-log entry of `{table}` in {scope} starts from the `after` of the "
            "key's entry before it, found before the scope if need be; a key's first entry "
            "ever starts from nothing.",
            _of_table(q.written_keys_query, q.CHAIN),
        ),
    ),
    # The links are what the batch scope's chain rule follows across its edge: the full
    # audit proves them.
    Rule(
        ONCE,
        Form(
            "change links follow each key's chain",
            "Each key's first change-log entry in a batch is linked to the key's entry before "
            "it when that entry left a row, and no other entry is linked: what the batch "
            "audit follows across the edge of its scope.",
            _rows(q.change_links_query),
        ),
        None,
    ),
    Rule(
        EACH_INVARIANT,
        Form(
            "{invariant}",
            "Declared by the application: {describe}",
            lambda _ledger, invariant: RowsQuery(q.invariant_query(invariant)),
        ),
        Form(
            "{invariant}, in scope",
            "Declared by the application, over {scope} (a conserved total batch by batch, a "
            "minimum over the keys written): {describe}",
            _invariant_in_scope,
        ),
    ),
    Rule(
        ONCE,
        Form(
            "every ingested event is accounted for exactly once",
            "Each batch's events fill positions 0, 1, 2, ... without a gap; a rejected event "
            "has its rejection, a duplicate its duplicate row, an executed event with a request "
            "id its executed request id; and every rejection, duplicate row, executed request "
            "id, change-log entry and result belongs to an event of the matching outcome and "
            "names its request id.",
            _rows(q.accounted_query),
        ),
        Form(
            "every event in scope is accounted for exactly once",
            "In {scope}, each batch's events fill positions 0, 1, 2, ... without a gap; a "
            "rejected event has its rejection, a duplicate its duplicate row, an executed "
            "event with a request id its executed request id, pointing back to it; every "
            "rejection, duplicate row, change-log entry and result belongs to an event of the "
            "matching outcome and names its request id.",
            _rows(lambda: q.accounted_query(BATCHES)),
        ),
    ),
    Rule(
        ONCE,
        Form(
            "request ids are unique among executed events",
            "No request id belongs to more than one applied or rejected event (a rejection "
            "for a missing or invalid request id takes none).",
            _rows(q.unique_request_ids_query),
        ),
        Form(
            "request ids in scope are unique among executed events",
            "No request id executed in {scope} belongs to another applied or rejected event.",
            _rows(q.unique_in_scope_query),
        ),
    ),
    Rule(
        ONCE,
        Form(
            "batch rows are contiguous",
            "Batch ids run 0, 1, 2, ... without a gap, and no log table holds rows of a batch "
            "that has no batch row.",
            _rows(q.batch_contiguity_query),
        ),
        Form(
            "batch rows in scope are contiguous",
            "Batch ids run on without a gap from the batch before the scope to the newest, and "
            "no log table holds rows of a batch from the scope on that has no batch row.",
            _rows(lambda: q.batch_contiguity_query(BATCHES)),
        ),
    ),
    Rule(
        ONCE,
        Form(
            "batch counts equal the rows they describe",
            "Each batch row's counts (events ingested, applied, rejected, duplicates, changes, "
            "results) equal the rows of that batch in the event log, change log and results.",
            _rows(q.batch_counts_query),
        ),
        Form(
            "batch counts in scope equal the rows they describe",
            "Each batch row of {scope} has counts equal to the rows of its batch in the event "
            "log, change log and results.",
            _rows(lambda: q.batch_counts_query(BATCHES)),
        ),
    ),
    Rule(
        ONCE,
        Form(
            "batch rows chain by hash",
            "Each batch row's `prev_hash` is the `batch_hash` of the batch before it; the "
            "first batch's is the genesis hash (64 zeros).",
            _rows(q.batch_chain_query),
        ),
        Form(
            "batch rows in scope chain by hash",
            "Each batch row of {scope} names the `batch_hash` of the batch before it; the "
            "first batch's is the genesis hash.",
            _rows(lambda: q.batch_chain_query(BATCHES)),
        ),
    ),
    _reconciliation(
        "entries_settled",
        "reconciled statement entries are each matched or open once",
        "Every statement entry of a source's files up to its latest reconciliation run's "
        "`through_file` is in exactly one match or one open break, of its own source (or, "
        "written off with nothing to adjust, in neither); no match or break holds an entry "
        "that no run considered.",
    ),
    _reconciliation(
        "changes_settled",
        "reconciled ledger changes are each matched or open once per source",
        "Every ledger change a source's runs considered (every movement, up to its latest "
        "run's `through_batch`, of each account it reconciles, from the start that run "
        "read from; for a run from before runs recorded their start, the movements in its "
        "batches of the rows its statements named) is in exactly one match or one open "
        "break of that source; no match or open break of a source holds a change beyond "
        "the last batch its runs reached.",
    ),
    _reconciliation(
        "matched_once",
        "no reconciled item is in two matches",
        "No statement entry is in two matches and no ledger change in two matches of one "
        "source (a change may be matched once by each source), and every matched item is "
        "filed under its match's source.",
    ),
    _reconciliation(
        "tolerances",
        "reconciliation matches keep their rules' tolerances",
        "Each match a rule made names a rule its run recorded (`ledger_recon_run_rules`), "
        "fits the rule's strategy, records the difference of its items (statement total "
        "minus ledger total; the days between the sides' latest dates), and keeps within "
        "the rule's tolerances: an amount difference of at most max(tolerance, "
        "floor(relative x |statement total|)), a date difference within its window. A "
        "write-off's match records 0 and its items net to 0; a match made by hand is bound "
        "by no rule, but records its items' amount difference too.",
    ),
)


def checks(ledger: StreamingLedger, scope: str, rules: tuple[Rule, ...] = RULES) -> list[Check]:
    """The checks of `rules` over `scope` (one of `SCOPES`) for `ledger`, in report order."""
    assert scope in SCOPES, scope
    found = []
    for rule in rules:
        form = rule.whole if scope == LEDGER else rule.in_scope
        if form is None:
            continue
        for subject, words in _subjects(rule.over, ledger):
            found.append(
                Check(
                    form.name.format(**words),
                    form.holds.format(scope=SCOPE_WORDS, **words),
                    form.rows(ledger, subject),
                    once=rule.whole_once if scope == LEDGER else True,
                    suite=rule.suite,
                )
            )
    _names_once(found, scope)
    return found


def _names_once(found: list[Check], scope: str) -> None:
    """Refuse a ledger whose declarations would give two checks of a suite one name (an
    invariant named as a rule of the platform): results are reported, ordered and linked by
    name, so one would hide the other."""
    seen: set[str] = set()
    for check in found:
        if check.name in seen:
            raise DeclarationError(
                f"two checks of the {_SUITE_WORDS[scope]} suite would be named {check.name!r}: "
                "give the invariant another name"
            )
        seen.add(check.name)


def _subjects(over: str, ledger: StreamingLedger) -> Iterator[tuple[Any, dict[str, str]]]:
    """What a rule's checks are about in `ledger`, each with the words its templates take."""
    if over == ONCE:
        yield None, {}
    elif over == EACH_TABLE:
        for table in ledger.tables.values():
            yield table, {"table": table.name}
    else:
        assert over == EACH_INVARIANT, over
        for invariant in ledger.invariants.values():
            yield invariant, {"invariant": invariant.name, "describe": invariant.describe()}
