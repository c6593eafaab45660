"""The micro-batch job: landed files to committed batches, and its fault points."""
