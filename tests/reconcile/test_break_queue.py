"""The breaks workbench's reads (`reconcile.storage.queue`): the queue shows exactly the open breaks
that pass its filters (source, reason, account prefix, days open), oldest first, a page of
them and how many pass in all; a break reads with its statement entry and its ledger movement.

The oracle is the readers' view `open_breaks`, read whole and filtered in Python; the ages are
set per example (an open break's `opened_at`), half a day off a whole number of days so that
the boundary of "open at least N days" never falls within the test's own time.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, text

from ledger_engine.reconcile.matching import (
    AMOUNT_MISMATCH,
    DUPLICATE,
    MISSING_IN_LEDGER,
    MISSING_IN_STATEMENT,
)
from ledger_engine.reconcile.matching.reference import match
from ledger_engine.reconcile.rules import AmountCriterion, Rule
from ledger_engine.reconcile.run import reconcile
from ledger_engine.reconcile.sources import Sources
from ledger_engine.reconcile.statement_inbox import land_statement
from ledger_engine.reconcile.storage.queue import QueueFilter, break_items, open_counts, open_queue
from ledger_engine.reconcile.storage.runs import list_open_breaks
from tests.support.bank import deposit
from tests.support.database import rows
from tests.support.events import event_file
from tests.support.reconcile import csv_source

RULE = Rule("same reference", 0, amount=AmountCriterion(5, 0.001), reference_similarity=1.0)
# Three sources, one account each; "al" is a prefix of "alice", and the third source's name
# holds the characters a LIKE pattern would read as wildcards.
SOURCES = Sources(
    {
        "bank": csv_source("bank", "alice", rules=(RULE,)),
        "card": csv_source("card", "bob", rules=(RULE,)),
        "50%_off": csv_source("50%_off", "al", rules=(RULE,)),
    },
    digest="q" * 64,
)
MOVEMENTS = [
    deposit("a1", "alice", 10_000, reference="R1", value_date="2026-11-02"),
    deposit("a2", "alice", 5_000, reference="R2", value_date="2026-11-03"),
    deposit("a3", "alice", 700, reference="R3", value_date="2026-11-03"),
    deposit("b1", "bob", 3_000, reference="B1", value_date="2026-11-03"),
    deposit("l1", "al", 200, reference="L1", value_date="2026-11-03"),
]
STATEMENTS = {
    # R1 matches (its repeat is a duplicate); R2 is 10 cents off; R9 the ledger never saw.
    "bank": b"Date,Amount,Ref\n2026-11-02,100.00,R1\n2026-11-03,50.10,R2\n"
    b"2026-11-04,12.00,R9\n2026-11-02,100.00,R1\n",
    "card": b"Date,Amount,Ref\n2026-11-04,20.00,B2\n",
    "50%_off": b"Date,Amount,Ref\n2026-11-04,1.00,L9\n",
}
REASONS = [MISSING_IN_LEDGER, MISSING_IN_STATEMENT, AMOUNT_MISMATCH, DUPLICATE]


@pytest.fixture
def breaks(engine: Engine, commit_files, tmp_path: Path) -> Engine:
    """Three sources reconciled once: eight open breaks over three accounts."""
    commit_files(engine, 0, [("b0.jsonl", event_file(MOVEMENTS))])
    for name, raw in STATEMENTS.items():
        land_statement(tmp_path / "statements", SOURCES.sources[name], "s1.csv", raw)
    reconcile(engine, SOURCES, tmp_path / "statements", match, who="run")
    return engine


def aged(engine: Engine, ages: dict[int, int]) -> None:
    """Open each break `ages` names that many days and a half ago."""
    now = datetime.now(UTC)
    with engine.begin() as conn:
        for break_id, days in ages.items():
            conn.execute(
                text("UPDATE ledger_recon_breaks SET opened_at = :t WHERE break_id = :b"),
                {"t": now - timedelta(days=days, hours=12), "b": break_id},
            )


def expected(engine: Engine, wanted: QueueFilter) -> list:
    """The open breaks passing `wanted`, oldest first, filtered here from the view."""
    now = datetime.now(UTC)
    return [
        b
        for b in list_open_breaks(engine)
        if (wanted.source is None or b.source == wanted.source)
        and (wanted.reason is None or b.reason == wanted.reason)
        and (wanted.account is None or b.account.startswith(wanted.account))
        and (wanted.min_age_days is None or now - b.opened_at >= timedelta(wanted.min_age_days))
    ]


def test_the_sources_open_the_breaks_the_queue_is_tried_on(breaks: Engine) -> None:
    assert open_counts(breaks) == {
        ("50%_off", MISSING_IN_LEDGER): 1,
        ("50%_off", MISSING_IN_STATEMENT): 1,
        ("bank", AMOUNT_MISMATCH): 1,
        ("bank", DUPLICATE): 1,
        ("bank", MISSING_IN_LEDGER): 1,
        ("bank", MISSING_IN_STATEMENT): 1,
        ("card", MISSING_IN_LEDGER): 1,
        ("card", MISSING_IN_STATEMENT): 1,
    }


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_the_queue_is_the_open_breaks_passing_its_filters_oldest_first(
    breaks: Engine, data: st.DataObject
) -> None:
    ids = [b.break_id for b in list_open_breaks(breaks)]
    aged(breaks, {i: data.draw(st.integers(0, 40), label=f"age of {i}") for i in ids})
    wanted = QueueFilter(
        source=data.draw(st.sampled_from([None, *SOURCES.sources, "nope", "50%"])),
        reason=data.draw(st.sampled_from([None, *REASONS])),
        account=data.draw(st.sampled_from([None, "a", "al", "alice", "bob", "b", "%", "_", "z"])),
        min_age_days=data.draw(st.one_of(st.none(), st.integers(0, 41))),
    )
    limit = data.draw(st.integers(1, 10))

    queue = open_queue(breaks, wanted, limit)

    passing = expected(breaks, wanted)
    assert [b.break_id for b in queue.breaks] == [b.break_id for b in passing[:limit]]
    assert queue.passing == len(passing)
    for shown, read in zip(queue.breaks, passing, strict=False):
        assert (shown.source, shown.reason, shown.account) == (
            read.source,
            read.reason,
            read.account,
        )
        assert (shown.statement_amount, shown.ledger_amount) == (
            read.statement_amount,
            read.ledger_amount,
        )
        assert (shown.write_off_request_id, shown.write_off_outcome) == (None, None)


def test_a_break_reads_with_its_statement_entry_and_its_ledger_movement(breaks: Engine) -> None:
    [(mismatch,)] = rows(
        breaks, "SELECT break_id FROM ledger_recon_breaks WHERE reason = :r", r=AMOUNT_MISMATCH
    )

    item = break_items(breaks, mismatch)

    assert item is not None
    assert (item.source, item.account, item.status, item.resolution) == (
        "bank",
        "alice",
        "open",
        None,
    )
    assert (item.file_name, item.statement_amount, item.statement_reference) == (
        "s1.csv",
        5_010,
        "R2",
    )
    assert (item.request_id, item.table_name, item.row_key, item.ledger_amount) == (
        "a2",
        "accounts",
        "alice",
        5_000,
    )
    assert item.stream == "deposits" and item.committed_at is not None
    assert break_items(breaks, mismatch + 1_000) is None
