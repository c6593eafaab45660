"""The words and figures a person reads about a batch and a match rate: a count in the
singular when it is one, a rate that says what was measured (never "0 events/s" for a batch
that took one event), and a share rounded to the nearest tenth, not cut."""

from __future__ import annotations

from ledger_engine.pipeline.job import BatchSummary
from ledger_engine.report.formats import share_text


def batch(ingested: int, seconds: float, **counts: int) -> BatchSummary:
    """A committed batch of `ingested` events that took `seconds` to execute and commit."""
    return BatchSummary(
        batch_id=7,
        committed=True,
        files=1,
        ingested=ingested,
        applied=counts.get("applied", ingested),
        rejected=counts.get("rejected", 0),
        duplicates=counts.get("duplicates", 0),
        execute_seconds=seconds,
        commit_seconds=0.0,
    )


def test_a_batch_of_one_event_says_one_event_and_a_rate_that_is_not_zero():
    said = batch(1, 2.5, applied=1, rejected=0, duplicates=1).describe()
    assert said.startswith("micro-batch 7: 1 event, 1 applied, 0 rejected, 1 duplicate in 2.50 s")
    assert "0 events/s" not in said
    assert said.endswith(", 0.4 events/s")


def test_a_large_batch_keeps_a_whole_rate():
    said = batch(20_000, 4.0, applied=19_990, rejected=10).describe()
    assert said == (
        "micro-batch 7: 20000 events, 19990 applied, 10 rejected, 0 duplicates in 4.00 s,"
        " 5000 events/s"
    )


def test_a_share_is_rounded_to_the_nearest_tenth():
    assert share_text(20, 30) == "66.7%"
    assert share_text(1, 3) == "33.3%"
    assert share_text(1, 8) == "12.5%"


def test_a_share_says_all_only_when_it_is_all_and_something_when_it_is_something():
    assert share_text(9999, 10_000) == "99.9%"
    assert share_text(30, 30) == "100.0%"
    assert share_text(1, 100_000) == "< 0.1%"
    assert share_text(0, 30) == "0.0%"
