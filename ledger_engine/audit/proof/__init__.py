"""The proof from PostgreSQL alone, in Python: the batch chain (`chain`), every table's Merkle
tree recomputed (`merkle_tree`, `snapshots`) or moved as the scope's changes say
(`merkle_scope`), over the whole ledger (`verify`, `ledger verify`) or the batches after the
last passing audit (`batch_verify`)."""
