-- A core migration, applied now.
INSERT INTO ledger_schema_migrations (version, name, checksum)
VALUES (%(version)s, %(name)s, %(checksum)s);
