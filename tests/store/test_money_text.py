"""An amount reads the same wherever a person reads it: PostgreSQL's `ledger_money_text` (the
views people query) writes exactly what Python's `money_text` writes (the command line, the
reports), for any int64 amount in any unit, and without a unit."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, text

from ledger_engine.core.money import MAX_CODE, MAX_PRECISION, Unit, money_text
from ledger_engine.core.records import INT64_MAX, INT64_MIN
from ledger_engine.store.database import connect

AMOUNTS = st.integers(INT64_MIN, INT64_MAX) | st.sampled_from([0, 1, -1, 999, 1000, -1000])
UNITS = st.none() | st.builds(
    Unit,
    st.from_regex(rf"[A-Za-z][A-Za-z0-9]{{0,{MAX_CODE - 1}}}", fullmatch=True),
    st.integers(0, MAX_PRECISION),
)
# Each amount as PostgreSQL formats it: the arrays unnested side by side, in their order.
_FORMATTED = text(
    "SELECT ledger_money_text(amount, code, places) FROM unnest("
    " CAST(:amounts AS numeric[]), CAST(:codes AS text[]), CAST(:places AS integer[])"
    ") WITH ORDINALITY AS a (amount, code, places, n) ORDER BY n"
)


@pytest.fixture(scope="module")
def sql_engine(module_database_url: str) -> Iterator[Engine]:
    engine = connect(module_database_url)
    yield engine
    engine.dispose()


def formatted_in_sql(engine: Engine, amounts: list[tuple[int, Unit | None]]) -> list[str]:
    params = {
        "amounts": [amount for amount, _ in amounts],
        "codes": [unit.code if unit else None for _, unit in amounts],
        "places": [unit.precision if unit else None for _, unit in amounts],
    }
    with engine.connect() as conn:
        return list(conn.execute(_FORMATTED, params).scalars())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(AMOUNTS, UNITS), min_size=1, max_size=40))
def test_sql_formats_every_int64_amount_as_python_does(sql_engine, amounts):
    assert formatted_in_sql(sql_engine, amounts) == [money_text(a, u) for a, u in amounts]


def test_sums_beyond_int64_read_alike_too(sql_engine):
    # An invariant's totals are sums, as numeric: they may pass the int64 range.
    amounts = [
        (10**30 + 7, Unit("EUR", 2)),
        (-(10**25), None),
        (INT64_MIN * 3, Unit("X", 18)),
        (10**48 - 1, None),  # the most digits PostgreSQL's to_char groups
        (-(10**60) - 123, Unit("EUR", 2)),  # and beyond
    ]
    assert formatted_in_sql(sql_engine, amounts) == [money_text(a, u) for a, u in amounts]
    assert (
        formatted_in_sql(sql_engine, amounts)[0] == "10,000,000,000,000,000,000,000,000,000.07 EUR"
    )


def test_no_amount_reads_as_null(sql_engine):
    with sql_engine.connect() as conn:
        assert conn.execute(text("SELECT ledger_money_text(NULL, 'EUR', 2)")).scalar() is None
