-- A declared table as now stored (new, or retyped while empty).
INSERT INTO ledger_declared_tables
    (ledger, table_name, sql_name, key_type, value_type, version)
VALUES (%s, %s, %s, %s, %s, %s)
ON CONFLICT (ledger, table_name) DO UPDATE SET key_type = EXCLUDED.key_type,
    value_type = EXCLUDED.value_type, version = EXCLUDED.version;
