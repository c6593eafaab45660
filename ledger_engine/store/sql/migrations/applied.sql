-- The core migrations applied so far, and their checksums.
SELECT version, checksum FROM ledger_schema_migrations;
