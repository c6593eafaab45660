-- A generated migration, with the exact text it ran.
INSERT INTO ledger_declared_migrations (ledger, version, description, statements, checksum)
VALUES (%s, %s, %s, %s, %s);
