"""Reconciliation: the ledger checked against what banks and providers say happened.

Statements land per source (`sources`: a bank account, a payment provider), are parsed by
their format (`formats/`: CSV with a declared column mapping, ISO 20022 camt.053) into
`entries.StatementEntry` records or explained rejections, and are loaded into PostgreSQL
exactly once. Nothing in this package's core modules does I/O but the loader's.
"""
