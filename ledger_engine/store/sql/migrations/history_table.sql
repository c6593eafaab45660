-- The migration history table if it exists (NULL if not): only the schema's owner may create
-- it, so a login that may not is never asked to.
SELECT to_regclass('ledger_schema_migrations');
