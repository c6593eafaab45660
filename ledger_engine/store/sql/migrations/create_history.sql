-- The core migrations applied, one row each, with the checksum of the file's text.
CREATE TABLE ledger_schema_migrations (
    version text PRIMARY KEY,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
