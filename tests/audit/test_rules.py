"""The audit's rules are declared once and both Great Expectations suites come from that list:
for any ledger, the batch suite holds every rule of the whole-ledger suite over its scope (but
the full audit's own: the change links and reconciliation's rules), in the same order, about the
same tables and invariants; a check is named once per suite, or the ledger is refused.

No database here: what the suites find is the business of `test_expectations.py`,
`test_batch_expectations.py` and `test_reconciliation_expectations.py` (which also prove the
generated suites are the committed ones, file for file).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.audit.expectations.rules import RECONCILIATION, SCOPE_WORDS, Check, checks
from ledger_engine.audit.expectations.suites import (
    AUDIT_SUITE,
    CHECK_NAME,
    batch_integrity_suite,
    integrity_suite,
)
from ledger_engine.audit.sql_files import BATCHES, LEDGER
from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.core.invariants import minimum
from ledger_engine.errors import DeclarationError
from tests.support.expectations import (
    ACCOUNTED,
    BATCH_COUNTS,
    CONTIGUOUS_BATCHES,
    HASH_CHAIN,
    LINKS,
    RECONCILED_CHECKS,
    UNIQUE_REQUESTS,
)
from tests.support.generated_apps import audited_ledgers

# The rules of the logs, each over the whole ledger and over the batch scope.
LOG_RULES_IN_SCOPE = {
    ACCOUNTED: "every event in scope is accounted for exactly once",
    UNIQUE_REQUESTS: "request ids in scope are unique among executed events",
    CONTIGUOUS_BATCHES: "batch rows in scope are contiguous",
    BATCH_COUNTS: "batch counts in scope equal the rows they describe",
    HASH_CHAIN: "batch rows in scope chain by hash",
}
LEDGERS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def full_audit_only(check: Check) -> bool:
    return check.name == LINKS or check.suite == RECONCILIATION


def labels(ledger: StreamingLedger) -> list[str]:
    """Every label a check's words may quote, longest first."""
    found = [*ledger.tables, *ledger.streams]
    for invariant in ledger.invariants.values():
        found += [invariant.name, invariant.describe()]
    return sorted(found, key=len, reverse=True)


@LEDGERS
@given(audited_ledgers())
def test_the_batch_suite_is_the_whole_ledger_suite_over_the_scope(ledger: StreamingLedger):
    whole, in_scope = checks(ledger, LEDGER), checks(ledger, BATCHES)
    tables, invariants = list(ledger.tables), list(ledger.invariants)
    assert len(whole) == 2 * len(tables) + 1 + len(invariants) + 5 + len(RECONCILED_CHECKS)
    assert [c.name for c in whole if full_audit_only(c)] == [LINKS, *RECONCILED_CHECKS]

    pairs = list(zip([c for c in whole if not full_audit_only(c)], in_scope, strict=True))
    subjects = [*tables, *tables]
    for (over_ledger, over_scope), table in zip(pairs, subjects, strict=False):
        assert over_ledger.name.startswith(f"{table} ") and over_scope.name.startswith(f"{table} ")
    about_invariants = pairs[len(subjects) : len(subjects) + len(invariants)]
    assert [(a.name, b.name) for a, b in about_invariants] == [
        (name, f"{name}, in scope") for name in invariants
    ]
    assert {a.name: b.name for a, b in pairs[len(subjects) + len(invariants) :]} == (
        LOG_RULES_IN_SCOPE
    )


@LEDGERS
@given(audited_ledgers())
def test_every_check_says_what_holds_in_its_own_words(ledger: StreamingLedger):
    """Each template is filled: no placeholder is left but in a label the ledger declared; a
    rule in scope says which batches it covers or where its scope starts."""
    for scope in (LEDGER, BATCHES):
        for check in checks(ledger, scope):
            text = f"{check.name}\n{check.holds}"
            for label in labels(ledger):
                text = text.replace(label, "")
            assert "{" not in text and "}" not in text, (scope, check)
            assert check.holds.strip() and check.name.strip()
    for check in checks(ledger, BATCHES):
        assert SCOPE_WORDS in check.holds or "before the scope" in check.holds, check.name


@LEDGERS
@given(audited_ledgers())
def test_every_rule_in_scope_reads_its_scope_and_runs_its_query_once(ledger: StreamingLedger):
    for check in checks(ledger, BATCHES):
        assert check.once, check.name
        assert "{batch}" in check.rows.query, check.name
    shared = [c for c in checks(ledger, LEDGER) if c.rows.rule is not None]
    assert shared == []  # a whole-ledger rule has a query of its own


@settings(max_examples=10, deadline=None)
@given(audited_ledgers())
def test_each_expectation_carries_its_check_name_and_report_suite(ledger: StreamingLedger):
    for suite in (integrity_suite(ledger), batch_integrity_suite(ledger)):
        scope = LEDGER if suite.suite_name == "ledger_integrity" else BATCHES
        built = suite.build()
        assert [(e.meta[CHECK_NAME], e.meta.get(AUDIT_SUITE)) for e in built] == [
            (c.name, RECONCILIATION if c.suite == RECONCILIATION else None)
            for c in checks(ledger, scope)
        ]


@pytest.mark.parametrize(
    "taken", ["batch rows are contiguous", "accounts equals the fold of its change log"]
)
def test_an_invariant_named_as_a_rule_of_the_platform_is_refused(taken: str):
    ledger = build_ledger()
    ledger.declare_invariant(minimum("accounts", 0, name=taken))
    with pytest.raises(DeclarationError, match="would be named"):
        checks(ledger, LEDGER)
