-- A declared view as created (new, or its query changed).
INSERT INTO ledger_declared_views (ledger, view_name, sql_name, checksum, version)
VALUES (%s, %s, %s, %s, %s)
ON CONFLICT (ledger, view_name) DO UPDATE SET checksum = EXCLUDED.checksum,
    version = EXCLUDED.version;
