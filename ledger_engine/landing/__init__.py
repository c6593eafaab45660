"""Files landing in an inbox, whatever they hold: written whole under a hidden name and
renamed into place (`files`), and the poll loop of the triggers that start a DAG run when new
ones land (`trigger`: the event inbox's, `pipeline.trigger`, and the statement inbox's,
`reconcile.trigger`, are built on it).

Layer: below `store` (it knows files, not the ledger).
"""
