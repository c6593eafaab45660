-- The ledger's declared tables as recorded, and how each is stored.
SELECT table_name, sql_name, key_type, value_type FROM ledger_declared_tables
WHERE ledger = %s;
