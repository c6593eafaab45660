-- The columns of a table of the ledger's schema, and their types (none: no such table).
SELECT column_name, data_type FROM information_schema.columns
WHERE table_schema = current_schema() AND table_name = %s;
