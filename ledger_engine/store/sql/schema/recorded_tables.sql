-- The ledger's declared tables as recorded, how each is stored and the unit it counts in.
SELECT table_name, sql_name, key_type, value_type, unit_code, unit_precision
FROM ledger_declared_tables
WHERE ledger = %s;
