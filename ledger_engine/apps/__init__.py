"""Applications built on the ledger; `bank` is the seed use case."""
