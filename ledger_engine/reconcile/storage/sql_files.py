"""Reconciliation storage's SQL statements: `sql/<module>/<what it does>.sql` beside this
module, one statement each, read as the store reads its own (`store.sql_files`)."""

from __future__ import annotations

from ledger_engine.store.sql_files import package_statements

statement = package_statements(__package__)
