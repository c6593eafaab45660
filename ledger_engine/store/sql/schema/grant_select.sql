-- The writer reads the views too (`ledger balance`); the auditor's SELECT comes from the
-- default privileges of sql/0007_roles.sql. Recorded as run in the generated migration.
GRANT SELECT ON {view} TO ledger_reader, ledger_writer;
