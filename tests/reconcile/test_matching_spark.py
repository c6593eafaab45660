"""The Spark matcher gives exactly the reference matcher's outcome: over generated items and
rules drawn so that candidates collide and costs tie, and on a few chosen cases."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger_engine.reconcile.matching import LedgerItem, MatchingOutcome, StatementItem
from ledger_engine.reconcile.matching.reference import match
from ledger_engine.reconcile.matching.similarity import fold, similarity
from ledger_engine.reconcile.matching.spark import (
    fold_column,
    ledger_frame,
    match_frames,
    similarity_column,
    statement_frame,
)
from ledger_engine.reconcile.rules import GROUP_FIELDS, MANY_TO_ONE, ONE_TO_MANY, ONE_TO_ONE, Rule
from tests.support.reconcile import (
    DESCRIPTIONS,
    REFERENCES,
    ledger_item,
    rule,
    rules,
    side_by_side,
    statement_item,
)


def spark_match(
    spark, statement: list[StatementItem], ledger: list[LedgerItem], rule_list: list[Rule]
) -> MatchingOutcome:
    return match_frames(
        spark, statement_frame(spark, statement), ledger_frame(spark, ledger), rule_list
    )


def test_spark_folds_and_compares_texts_as_the_oracle_does(spark):
    texts = [
        *REFERENCES,
        *DESCRIPTIONS,
        "  ΣΑΣ  σ ",
        "ǅ\u2028x",
        "\U0001f600 Ab",
        "a\x1cb",
        "ﬁle",
    ]
    rows = [(a, b) for a in texts for b in texts]
    frame = spark.createDataFrame(rows, "a string, b string")
    got = frame.select(
        "a",
        "b",
        fold_column(frame.a).alias("fa"),
        similarity_column(fold_column(frame.a), fold_column(frame.b)).alias("sim"),
    ).collect()

    assert {(r.a, r.fa) for r in got} == {(a, fold(a)) for a in texts}
    assert {(r.a, r.b): r.sim for r in got} == {(a, b): similarity(a, b) for a, b in rows}


CASES = {
    "exact reference, tolerance, window": (
        [statement_item(1, 10_000, reference=" INV-1 ", days=1), statement_item(2, 2_000)],
        [ledger_item(1, 10_000, reference="inv-1"), ledger_item(2, 2_050, days=2)],
        [rule("exact", reference=1.0, window_days=2), rule("loose", 1, tolerance=50)],
    ),
    "batch payout and split payment": (
        [
            statement_item(1, 600, reference="BATCH-9", days=3),
            statement_item(2, 400, days=1),
            statement_item(3, 600, days=1),
        ],
        [
            ledger_item(3, 100, reference="batch-9", days=1),
            ledger_item(1, 200, reference="BATCH-9"),
            ledger_item(2, 300, reference=" Batch-9 ", days=2),
            ledger_item(4, 1_000, days=1),
        ],
        [
            rule("payout", strategy=ONE_TO_MANY, group_by="reference", window_days=5),
            rule("split", 1, strategy=MANY_TO_ONE, group_by="date"),
        ],
    ),
    "ties, duplicates, mismatches, missing": (
        [
            statement_item(2, 100, reference="A"),
            statement_item(1, 100, reference="A"),
            statement_item(3, 100, reference="A"),
            statement_item(4, 1_000, reference="R"),
            statement_item(5, 7),
        ],
        [
            ledger_item(9, 100, reference="a"),
            ledger_item(3, 100, reference="A"),
            ledger_item(5, 1_100, reference="r", days=30),
            ledger_item(6, 8),
        ],
        [rule("exact", reference=1.0), rule("fuzzy", 1, description=0.5)],
    ),
    "nothing at all": ([], [], [rule("exact", reference=1.0)]),
}


@pytest.mark.parametrize("case", CASES)
def test_chosen_cases_match_the_oracle(spark, case):
    statement, ledger, rule_list = CASES[case]

    assert spark_match(spark, statement, ledger, rule_list) == match(statement, ledger, rule_list)


# Each example is one Spark run of a few dozen small jobs (per rule and per round of the
# greedy); it checks several independent inputs side by side (on accounts of their own), so
# that a few examples see many inputs.
@settings(max_examples=8, deadline=None)
@given(side_by_side(), rules())
def test_generated_inputs_match_the_oracle_exactly(spark, inputs, rule_list):
    statement, ledger = inputs

    assert spark_match(spark, statement, ledger, rule_list) == match(statement, ledger, rule_list)


@st.composite
def exact_rules(draw: st.DrawFn) -> list[Rule]:
    """An exact rule first (a text required equal, so an equi-join on it with the date window
    as a filter, the Spark matcher's fast path), sometimes grouped, then maybe a looser one."""
    strategy = draw(st.sampled_from((ONE_TO_ONE, ONE_TO_ONE, ONE_TO_MANY, MANY_TO_ONE)))
    equal = draw(st.sampled_from(("reference", "description", "both")))
    first = rule(
        "exact",
        strategy=strategy,
        group_by=None if strategy == ONE_TO_ONE else draw(st.sampled_from(GROUP_FIELDS)),
        tolerance=draw(st.sampled_from((0, 0, 50))),
        window_days=draw(st.sampled_from((1, 2, 3, None))),
        reference=1.0 if equal != "description" else None,
        description=1.0 if equal != "reference" else None,
    )
    looser = rule("looser", 1, tolerance=50, window_days=2, description=0.4)
    return [first, *draw(st.sampled_from(([], [looser])))]


# The fast path's own edge cases: equal keys shared by several items of either side (ties up
# to the ids, identical statement entries), groups, and a window that cuts some pairs.
@settings(max_examples=5, deadline=None)
@given(side_by_side(), exact_rules())
def test_exact_rules_match_the_oracle_exactly(spark, inputs, rule_list):
    statement, ledger = inputs

    assert spark_match(spark, statement, ledger, rule_list) == match(statement, ledger, rule_list)
