"""Running the ledger on Spark: the session, the runner, and the Structured Streaming job."""
