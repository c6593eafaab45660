-- The ledger schema's identity (sql/0023_ledger_identity.sql) and where it lives.
SELECT id::text, current_database(), current_schema() FROM ledger_identity;
