"""Names are labels; the SQL identifiers derived from them are stable, safe and distinct."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from ledger_engine.core.naming import label_problem, sql_identifier

IDENTIFIER = re.compile(r"[a-z][a-z0-9_]{0,62}")
# Any text PostgreSQL can store: no NUL, no unpaired surrogate.
LABELS = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1
).filter(lambda s: label_problem("label", s) is None)


@pytest.mark.parametrize("label", ["accounts", "asset_ledger", "a", "x1_y2"])
def test_a_plain_lower_case_name_is_its_own_identifier(label):
    assert sql_identifier(label) == label


def test_a_derived_identifier_never_changes_between_releases():
    # Migrations record these names: the derivation is part of the storage format. The hash
    # is the SHA-256 of the label (`printf "Asset Ledger" | sha256sum`), first 12 digits.
    assert sql_identifier("Asset Ledger") == "asset_ledger_5304b75df3a0"
    assert sql_identifier("simple example") == "simple_example_64c5f569f8f5"


@pytest.mark.parametrize(
    "label", ["ledger_events", "pg_class", "Accounts", "1st", "_x", "€", "'; DROP TABLE x; --"]
)
def test_a_name_that_is_not_a_plain_identifier_gets_a_slug_and_a_hash(label):
    identifier = sql_identifier(label)
    assert IDENTIFIER.fullmatch(identifier)
    assert not identifier.startswith(("ledger_", "pg_"))
    assert identifier != label


def test_names_that_differ_only_in_case_or_punctuation_get_distinct_identifiers():
    labels = ["Asset Ledger", "asset ledger", "asset-ledger", "asset_ledger", "ASSET LEDGER"]
    assert len({sql_identifier(label) for label in labels}) == len(labels)


def test_a_very_long_name_gets_an_identifier_within_postgresqls_limit():
    identifier = sql_identifier("Ä long name " * 70)
    assert len(identifier.encode()) <= 63
    assert IDENTIFIER.fullmatch(identifier)


@given(LABELS)
def test_every_storable_label_has_a_safe_deterministic_identifier(label):
    identifier = sql_identifier(label)
    assert IDENTIFIER.fullmatch(identifier)
    assert not identifier.startswith(("ledger_", "pg_"))
    assert sql_identifier(label) == identifier


@given(LABELS, LABELS)
@example(first="0", second="PG")  # a slug that is a reserved prefix once "_" follows it
@example(first="Ledger", second="ledger")
def test_distinct_labels_get_distinct_identifiers(first, second):
    if first != second:
        assert sql_identifier(first) != sql_identifier(second)
