"""The user's contract, with no I/O: declarations, records, storable values, admission, ingest and
the transaction executor."""
