"""Proving the system of record intact: Merkle snapshots, Great Expectations, reports."""
