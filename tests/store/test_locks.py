"""The platform's advisory locks are named in one place (`store.locks`): no two kinds of work
share a lock's first key, and no module or SQL file takes a lock by a number of its own."""

from __future__ import annotations

import re
from pathlib import Path

from ledger_engine.store import locks

PACKAGE = Path(locks.__file__).resolve().parents[1]
MIGRATIONS = PACKAGE.parent / "sql"  # the core migrations
# A number in the locks' range, written in Python or SQL (with or without underscores).
LOCK_NUMBER = re.compile(r"\b7_?318_?\d{3}\b")


def test_every_kind_of_work_has_a_lock_of_its_own() -> None:
    numbers = list(locks.ADVISORY_LOCKS.values())
    assert len(set(numbers)) == len(numbers)
    declared = {name: value for name, value in vars(locks).items() if name.endswith("_LOCK")}
    assert sorted(declared.values()) == sorted(numbers), "every lock is in ADVISORY_LOCKS"


def test_no_module_or_sql_file_takes_a_lock_by_a_number_of_its_own() -> None:
    elsewhere = {
        str(path): LOCK_NUMBER.findall(path.read_text(encoding="utf-8"))
        for path in [*PACKAGE.rglob("*.py"), *PACKAGE.rglob("*.sql"), *MIGRATIONS.glob("*.sql")]
        if path.resolve() != Path(locks.__file__).resolve()
    }
    assert {path: found for path, found in elsewhere.items() if found} == {}
