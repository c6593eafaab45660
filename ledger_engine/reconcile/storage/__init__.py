"""Keeping reconciliation's records in the system of record: the statement files and entries
loaded (`statements`), each run with its matches and breaks (`runs`), breaks worked by people
(`resolutions`) and the queue of open breaks as the workbench reads it (`queue`).

Its statements are files under `sql/<module>/`, read as the store reads its own
(`sql_files.statement`); the tables are the core migrations' (`sql/0017`, `0019`, `0020`,
`0024`). Layer: within `reconcile`, above `store` (locks, the database) and below the rest of
`reconcile`, whose types it stores.
"""
