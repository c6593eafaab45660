"""The bank: accounts and an asset ledger moved by deposits and transfers, with its generator."""
