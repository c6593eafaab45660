-- Other ledgers with generated migrations in this schema (one schema holds one ledger).
SELECT DISTINCT ledger FROM ledger_declared_migrations WHERE ledger <> %s;
