-- A view dropped before it is created again (ledger_rows reads every declared table, and a
-- table a view reads cannot be dropped). Recorded as run in the generated migration.
DROP VIEW IF EXISTS {view};
