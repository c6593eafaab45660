-- A declared table as now stored (new, or retyped while empty), with its unit (NULL, NULL for
-- none): also how a table's changed unit is recorded.
INSERT INTO ledger_declared_tables
    (ledger, table_name, sql_name, key_type, value_type, unit_code, unit_precision, version)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (ledger, table_name) DO UPDATE SET key_type = EXCLUDED.key_type,
    value_type = EXCLUDED.value_type, unit_code = EXCLUDED.unit_code,
    unit_precision = EXCLUDED.unit_precision, version = EXCLUDED.version;
