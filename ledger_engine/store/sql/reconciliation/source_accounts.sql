-- The ledger rows a source's statements have spoken of (for a source that names its rows by
-- the ledger's own keys).
SELECT DISTINCT account FROM ledger_statement_entries WHERE source = %s AND table_name = %s;
