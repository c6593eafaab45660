"""Statement formats: each turns one file's bytes into a `ParsedStatement` for its source."""

from __future__ import annotations

from ledger_engine.reconcile.entries import ParsedStatement
from ledger_engine.reconcile.sources import Source


def parse_statement(raw: bytes, source: Source) -> ParsedStatement:
    """`raw` read in `source`'s format."""
    if source.format == "csv":
        from ledger_engine.reconcile.formats.csv_statement import parse_csv

        return parse_csv(raw, source)
    if source.format == "camt053":
        from ledger_engine.reconcile.formats.camt053 import parse_camt053

        return parse_camt053(raw, source)
    raise AssertionError(f"unknown format {source.format!r}: sources.py admits no such source")
