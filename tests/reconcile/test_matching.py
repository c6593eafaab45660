"""Matching statement items with ledger items, as the specification in
`ledger_engine.reconcile.matching` states it, read through the reference matcher (the oracle
the Spark matcher is held to)."""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from ledger_engine.reconcile.matching import (
    AMOUNT_MISMATCH,
    DUPLICATE,
    MISSING_IN_LEDGER,
    MISSING_IN_STATEMENT,
    Break,
    Match,
)
from ledger_engine.reconcile.matching.reference import match
from ledger_engine.reconcile.matching.similarity import fold, levenshtein, similarity
from ledger_engine.reconcile.rules import MANY_TO_ONE, ONE_TO_MANY
from tests.support.reconcile import (
    ACCOUNT,
    ledger_item,
    ledger_items,
    rule,
    rules,
    statement_item,
    statement_items,
)

EXACT = rule("exact", reference=1.0, window_days=2)


def s_id(n: int) -> tuple[int, ...]:
    return (1, n)


def l_id(n: int) -> tuple[int, ...]:
    return (7, n, 0)


def pairs(outcome) -> list[tuple[str, tuple, tuple]]:
    """The matches as (rule, statement ids, ledger ids)."""
    return [(m.rule, m.statement_ids, m.ledger_ids) for m in outcome.matches]


def reasons(outcome) -> list[tuple[str, tuple, tuple]]:
    """The breaks as (reason, statement ids, ledger ids)."""
    return [(b.reason, b.statement_ids, b.ledger_ids) for b in outcome.breaks]


# --- Similarity ---------------------------------------------------------------------------


def test_folding_lowers_case_and_makes_white_space_runs_one_space():
    assert fold("  Card\u00a0\t FEE\u3000 ") == "card fee"
    assert fold("ΟΔΟΣ") == "οδος"  # the final sigma, as Spark's lower gives it
    assert fold("Straße") == "straße"  # lower-cased, not case-folded to "strasse"
    assert fold("a\x1cb") == "a\x1cb"  # the information separators are not White_Space


def test_similarity_is_one_minus_the_edit_distance_over_the_longer_length():
    assert levenshtein("kitten", "sitting") == 3
    assert similarity("Card fee", "card  FEES") == 1 - 1 / 9
    assert similarity("", "  ") == 1.0  # two empty texts once folded
    assert similarity("x", None) is None
    assert levenshtein("\U0001f600a", "a") == 1  # code points, not UTF-16 units


# --- One-to-one rules ---------------------------------------------------------------------


def test_an_exact_reference_match_pairs_the_entries_with_their_differences():
    outcome = match(
        [statement_item(1, 10_000, reference=" INV-1 ", days=1)],
        [ledger_item(1, 10_000, reference="inv-1")],
        [EXACT],
    )

    assert outcome.matches == (
        Match(
            "exact", ACCOUNT, (s_id(1),), (l_id(1),), amount_difference=0, date_difference_days=1
        ),
    )
    assert outcome.breaks == ()


def test_a_reference_criterion_is_not_met_when_either_side_lacks_the_reference():
    outcome = match([statement_item(1, 100)], [ledger_item(1, 100)], [EXACT])

    assert pairs(outcome) == []
    assert reasons(outcome) == [
        (MISSING_IN_LEDGER, (s_id(1),), ()),
        (MISSING_IN_STATEMENT, (), (l_id(1),)),
    ]


def test_items_of_different_accounts_never_match():
    outcome = match(
        [statement_item(1, 100, account="a")], [ledger_item(1, 100, account="b")], [rule()]
    )

    assert pairs(outcome) == []


def test_an_absolute_tolerance_admits_a_difference_up_to_it_and_no_further():
    within = rule("within 50", tolerance=50)
    outcome = match(
        [statement_item(1, 1_000), statement_item(2, 2_000)],
        [ledger_item(1, 1_050), ledger_item(2, 2_051)],
        [within],
    )

    assert outcome.matches == (Match("within 50", ACCOUNT, (s_id(1),), (l_id(1),), -50, 0),)
    assert [b.reason for b in outcome.breaks] == [MISSING_IN_LEDGER, MISSING_IN_STATEMENT]


def test_a_relative_tolerance_is_a_share_of_the_statement_amount_rounded_down():
    # 1% of 10_099 is 100.99: 100 is allowed, 101 is not.
    one_percent = rule("1%", relative=0.01)
    outcome = match(
        [statement_item(1, 10_099), statement_item(2, -10_099, days=1)],
        [ledger_item(1, 9_999), ledger_item(2, -9_998, days=1)],
        [one_percent],
    )

    assert pairs(outcome) == [("1%", (s_id(1),), (l_id(1),))]


def test_the_larger_of_the_absolute_and_relative_tolerances_applies():
    either = rule("either", tolerance=5, relative=0.01)
    outcome = match(
        [statement_item(1, 100), statement_item(2, 10_000, days=3)],
        [ledger_item(1, 105), ledger_item(2, 10_100, days=3)],
        [either],
    )

    assert pairs(outcome) == [
        ("either", (s_id(1),), (l_id(1),)),
        ("either", (s_id(2),), (l_id(2),)),
    ]


def test_the_date_window_includes_its_edges():
    two_days = rule("two days", window_days=2)
    outcome = match(
        [statement_item(1, 100, days=0), statement_item(2, 200, days=10)],
        [ledger_item(1, 100, days=2), ledger_item(2, 200, days=7)],
        [two_days],
    )

    assert outcome.matches == (Match("two days", ACCOUNT, (s_id(1),), (l_id(1),), 0, 2),)


def test_without_a_window_dates_are_not_compared():
    outcome = match([statement_item(1, 100, days=300)], [ledger_item(1, 100)], [rule()])

    assert outcome.matches[0].date_difference_days == 300


def test_a_fuzzy_description_matches_at_or_above_its_threshold():
    # "card fees" against "card fee": 1 edit over 9 code points, similarity 0.888...
    fuzzy = rule("fuzzy", description=0.85, window_days=3)
    outcome = match(
        [statement_item(1, 100, description="CARD  FEES"), statement_item(2, 200)],
        [ledger_item(1, 100, description="card fee"), ledger_item(2, 200, description="fee")],
        [fuzzy],
    )

    assert pairs(outcome) == [("fuzzy", (s_id(1),), (l_id(1),))]


def test_a_fuzzy_description_below_its_threshold_does_not_match():
    strict = rule("strict", description=0.9)
    outcome = match(
        [statement_item(1, 100, description="card fees")],
        [ledger_item(1, 100, description="card fee")],
        [strict],
    )

    assert pairs(outcome) == []


# --- Grouped rules ------------------------------------------------------------------------


def test_one_to_many_settles_a_batch_payout_with_the_ledger_entries_of_one_reference():
    payout = rule("payout", strategy=ONE_TO_MANY, group_by="reference", window_days=5)
    outcome = match(
        [statement_item(1, 600, reference="BATCH-9", days=3)],
        [
            ledger_item(3, 100, reference="batch-9", days=1),
            ledger_item(1, 200, reference="BATCH-9"),
            ledger_item(2, 300, reference=" Batch-9 ", days=2),
            ledger_item(4, 300, reference="other"),
        ],
        [payout],
    )

    # The group's date is its latest member's (day 2), its id order is the members'.
    assert outcome.matches == (
        Match("payout", ACCOUNT, (s_id(1),), (l_id(1), l_id(2), l_id(3)), 0, 1),
    )
    assert reasons(outcome) == [(MISSING_IN_STATEMENT, (), (l_id(4),))]


def test_a_group_is_matched_as_a_whole_or_not_at_all():
    payout = rule("payout", strategy=ONE_TO_MANY, group_by="reference")
    outcome = match(
        [statement_item(1, 300, reference="B")],
        [ledger_item(1, 100, reference="B"), ledger_item(2, 300, reference="B")],
        [payout],
    )

    # 100 + 300 is not 300; and a single ledger item is no group.
    assert pairs(outcome) == []


def test_items_lacking_the_grouping_field_form_no_group():
    payout = rule("payout", strategy=ONE_TO_MANY, group_by="reference")
    outcome = match([statement_item(1, 300)], [ledger_item(1, 100), ledger_item(2, 200)], [payout])

    assert pairs(outcome) == []


def test_many_to_one_matches_a_split_payment_with_one_ledger_entry():
    split = rule("split", strategy=MANY_TO_ONE, group_by="date", reference=None)
    outcome = match(
        [
            statement_item(2, 400, days=1, reference="part 2"),
            statement_item(1, 600, days=1, reference="part 1"),
            statement_item(3, 50, days=2),
        ],
        [ledger_item(1, 1_000, days=1, reference="invoice")],
        [split],
    )

    assert outcome.matches == (Match("split", ACCOUNT, (s_id(1), s_id(2)), (l_id(1),), 0, 0),)
    assert reasons(outcome) == [(MISSING_IN_LEDGER, (s_id(3),), ())]


def test_a_group_has_only_its_grouping_text_so_a_criterion_on_another_text_fails():
    payout = rule("payout", strategy=ONE_TO_MANY, group_by="reference", description=0.5)
    outcome = match(
        [statement_item(1, 300, reference="B", description="payout")],
        [
            ledger_item(1, 100, reference="B", description="payout"),
            ledger_item(2, 200, reference="B", description="payout"),
        ],
        [payout],
    )

    assert pairs(outcome) == []


# --- Priority and ties --------------------------------------------------------------------


def test_an_earlier_rule_takes_an_item_before_a_fuzzier_one_could():
    fuzzy = rule("fuzzy", priority=1, tolerance=100)
    exact = rule("exact", priority=0, reference=1.0)
    outcome = match(
        [statement_item(1, 1_000, reference="R1")],
        # The fuzzy rule alone would pick ledger 1 (an equal cost, then the smaller id).
        [ledger_item(1, 1_000), ledger_item(2, 1_000, reference="r1")],
        [fuzzy, exact],  # given out of order: priority decides
    )

    assert pairs(outcome) == [("exact", (s_id(1),), (l_id(2),))]
    assert reasons(outcome) == [(MISSING_IN_STATEMENT, (), (l_id(1),))]


def test_later_rules_match_what_earlier_ones_left():
    outcome = match(
        [statement_item(1, 100, reference="A"), statement_item(2, 200)],
        [ledger_item(1, 100, reference="a"), ledger_item(2, 205)],
        [EXACT, rule("loose", priority=1, tolerance=10)],
    )

    assert pairs(outcome) == [
        ("exact", (s_id(1),), (l_id(1),)),
        ("loose", (s_id(2),), (l_id(2),)),
    ]


def test_the_smaller_difference_wins_then_the_closer_date_then_the_higher_similarity():
    loose = rule("loose", tolerance=100, description=0.1)
    outcome = match(
        [statement_item(1, 1_000, description="card fee")],
        [
            ledger_item(1, 1_010, description="card fee"),
            ledger_item(2, 1_000, days=1, description="card fee"),
            ledger_item(3, 1_000, description="card fees"),
            ledger_item(4, 1_000, description="card  FEE"),
        ],
        [loose],
    )

    assert pairs(outcome) == [("loose", (s_id(1),), (l_id(4),))]


def test_equal_costs_are_broken_by_the_statement_id_then_the_ledger_id():
    any_ = rule("any")
    outcome = match(
        [statement_item(2, 100), statement_item(1, 100)],
        [ledger_item(9, 100), ledger_item(3, 100), ledger_item(5, 100)],
        [any_],
    )

    assert pairs(outcome) == [
        ("any", (s_id(1),), (l_id(3),)),
        ("any", (s_id(2),), (l_id(5),)),
    ]
    assert reasons(outcome) == [(MISSING_IN_STATEMENT, (), (l_id(9),))]


def test_the_choice_is_the_greedy_by_cost_not_the_largest_matching():
    # Statement 1 could take either ledger item, statement 2 only ledger 1. The cheapest pair
    # (statement 1, ledger 1) is kept first, which leaves statement 2 unmatched.
    loose = rule("loose", tolerance=10)
    outcome = match(
        [statement_item(1, 100), statement_item(2, 95)],
        [ledger_item(1, 100), ledger_item(2, 108)],
        [loose],
    )

    assert pairs(outcome) == [("loose", (s_id(1),), (l_id(1),))]
    assert [b.reason for b in outcome.breaks] == [MISSING_IN_LEDGER, MISSING_IN_STATEMENT]


# --- Breaks -------------------------------------------------------------------------------


def test_a_statement_entry_repeating_a_matched_one_is_a_duplicate():
    outcome = match(
        [statement_item(1, 100, reference="A"), statement_item(2, 100, reference="A")],
        [ledger_item(1, 100, reference="A")],
        [EXACT],
    )

    assert pairs(outcome) == [("exact", (s_id(1),), (l_id(1),))]
    assert reasons(outcome) == [(DUPLICATE, (s_id(2),), ())]


def test_repeats_of_an_unmatched_entry_are_duplicates_of_it_and_it_keeps_its_own_reason():
    outcome = match(
        [statement_item(n, 100, reference="A") for n in (3, 1, 2)],
        [],
        [EXACT],
    )

    assert reasons(outcome) == [
        (DUPLICATE, (s_id(2),), ()),
        (DUPLICATE, (s_id(3),), ()),
        (MISSING_IN_LEDGER, (s_id(1),), ()),
    ]


def test_entries_differing_in_any_field_are_not_duplicates():
    outcome = match(
        [statement_item(1, 100, reference="A"), statement_item(2, 100, reference="a")], [], []
    )

    assert [b.reason for b in outcome.breaks] == [MISSING_IN_LEDGER, MISSING_IN_LEDGER]


def test_equal_references_with_different_amounts_are_an_amount_mismatch():
    outcome = match(
        [statement_item(1, 1_000, reference="INV-7"), statement_item(2, 500, reference="INV-8")],
        [ledger_item(1, 1_200, reference="inv-7", days=9), ledger_item(2, 700, reference="X")],
        [EXACT],
    )

    assert outcome.breaks == (
        Break(AMOUNT_MISMATCH, ACCOUNT, (s_id(1),), (l_id(1),), amount_difference=-200),
        Break(MISSING_IN_LEDGER, ACCOUNT, (s_id(2),), ()),
        Break(MISSING_IN_STATEMENT, ACCOUNT, (), (l_id(2),)),
    )


def test_amount_mismatches_pair_greedily_by_the_smaller_difference():
    outcome = match(
        [statement_item(1, 1_000, reference="R"), statement_item(2, 2_000, reference="R")],
        [ledger_item(1, 1_900, reference="R"), ledger_item(2, 1_100, reference="R")],
        [EXACT],
    )

    assert outcome.breaks == (
        Break(AMOUNT_MISMATCH, ACCOUNT, (s_id(1),), (l_id(2),), -100),
        Break(AMOUNT_MISMATCH, ACCOUNT, (s_id(2),), (l_id(1),), 100),
    )


def test_equal_references_and_amounts_left_unmatched_are_missing_on_each_side():
    # Outside the rule's date window: the same amount is no amount mismatch.
    outcome = match(
        [statement_item(1, 100, reference="A")],
        [ledger_item(1, 100, reference="A", days=10)],
        [EXACT],
    )

    assert reasons(outcome) == [
        (MISSING_IN_LEDGER, (s_id(1),), ()),
        (MISSING_IN_STATEMENT, (), (l_id(1),)),
    ]


def test_with_no_rules_every_item_is_a_break():
    outcome = match([statement_item(1, 1)], [ledger_item(1, 1), ledger_item(2, 2)], [])

    assert [b.reason for b in outcome.breaks] == [
        MISSING_IN_LEDGER,
        MISSING_IN_STATEMENT,
        MISSING_IN_STATEMENT,
    ]


# --- Over generated inputs ----------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(statement_items(), ledger_items(), rules())
def test_every_item_ends_in_exactly_one_match_or_break(statement, ledger, rule_list):
    outcome = match(statement, ledger, rule_list)

    named_statement = Counter(
        i for part in (*outcome.matches, *outcome.breaks) for i in part.statement_ids
    )
    named_ledger = Counter(
        i for part in (*outcome.matches, *outcome.breaks) for i in part.ledger_ids
    )
    assert named_statement == Counter(s.id for s in statement)
    assert named_ledger == Counter(item.id for item in ledger)


@settings(max_examples=150, deadline=None)
@given(statement_items(), ledger_items(), rules())
def test_matches_keep_within_their_rules_tolerances(statement, ledger, rule_list):
    outcome = match(statement, ledger, rule_list)

    by_name = {r.name: r for r in rule_list}
    amounts = {s.id: s.amount for s in statement} | {item.id: item.amount for item in ledger}
    for m in outcome.matches:
        r = by_name[m.rule]
        statement_total = sum(amounts[i] for i in m.statement_ids)
        ledger_total = sum(amounts[i] for i in m.ledger_ids)
        assert m.amount_difference == statement_total - ledger_total
        assert abs(m.amount_difference) <= r.amount.allowed(statement_total)
        if r.window_days is not None:
            assert m.date_difference_days <= r.window_days


@settings(max_examples=100, deadline=None)
@given(statement_items(), ledger_items(), rules(), st.randoms(use_true_random=False))
def test_the_outcome_does_not_depend_on_the_order_of_the_inputs(
    statement, ledger, rule_list, rng: random.Random
):
    outcome = match(statement, ledger, rule_list)

    shuffled = [list(x) for x in (statement, ledger, rule_list)]
    for part in shuffled:
        rng.shuffle(part)
    assert match(*shuffled) == outcome
