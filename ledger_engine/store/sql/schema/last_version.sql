-- The version of the ledger's last generated migration (NULL: none yet).
SELECT max(version) FROM ledger_declared_migrations WHERE ledger = %s;
