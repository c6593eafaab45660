"""Benchmarks of the streaming ledger (see `bench/run.py`)."""
